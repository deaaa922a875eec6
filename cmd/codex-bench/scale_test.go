package main

import (
	"slices"
	"strings"
	"testing"
)

func TestParseCounts(t *testing.T) {
	got, err := parseCounts(" 10, 500,2000 ")
	if err != nil || !slices.Equal(got, []int{10, 500, 2000}) {
		t.Fatalf("parseCounts = %v, %v", got, err)
	}
	for _, bad := range []string{"", "1,x", "0", "-3", ","} {
		if v, err := parseCounts(bad); err == nil {
			t.Errorf("parseCounts(%q) = %v, want an error", bad, v)
		}
	}
}

func TestScaleMedianSkipsFailedRuns(t *testing.T) {
	runs := []ScaleProcsRun{{Connect: 3}, {Connect: 100, Error: "boom"}, {Connect: 5}}
	if m := scaleMedian(runs, procsOK, func(r ScaleProcsRun) float64 { return r.Connect }); m != 4 {
		t.Fatalf("median = %v, want 4 (the failed run left out)", m)
	}
}

// The table compares the connect cost at each N with the server's own at
// the smallest N, and checks the thread target at 300 connections.
func TestScaleDetail(t *testing.T) {
	o := &Scale{W: 100,
		Procs: map[int][]ScaleProcsRun{10: {{N: 10, Connect: 2}}, 2000: {{N: 2000, Connect: 3}}},
		Conns: map[int][]ScaleConnsRun{300: {{C: 300, Threads: 12, ThreadsPeak: 13}}}}
	r := &Scale{W: 100,
		Procs: map[int][]ScaleProcsRun{10: {{N: 10, Connect: 2}}, 2000: {{N: 2000, Connect: 2}}},
		Conns: map[int][]ScaleConnsRun{300: {{C: 300, Threads: 9, ThreadsPeak: 9}}}}
	var b strings.Builder
	scaleDetail(&b, o, r)
	out := b.String()
	for _, want := range []string{
		"| N=2000: connect + initialize p50, ms | 3.00 | 2.00 | 1.50× |",
		"| N=2000: connect p50 / own at N=10 | 1.50 | 1.00 | 1.50× |",
		"| C=300: threads | 12.0 | 9.00 | 1.33× |",
		"Threads at 300 connections, ours: 12 (peak 13)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "N=10: connect p50 / own") {
		t.Errorf("the smallest N is compared with itself:\n%s", out)
	}
}

// A terminate-all that failed leaves the run's other rows standing.
func TestScaleTerminateErrorKeepsOtherRows(t *testing.T) {
	o := &Scale{Procs: map[int][]ScaleProcsRun{2000: {{N: 2000, Connect: 4, TermCPU: 0.5}}}}
	r := &Scale{Procs: map[int][]ScaleProcsRun{2000: {{N: 2000, Connect: 5, TermCPU: 9, TermError: "stalled"}}}}
	var b strings.Builder
	scaleDetail(&b, o, r)
	out := b.String()
	for _, want := range []string{
		"| N=2000: connect + initialize p50, ms | 4.00 | 5.00 | 0.80× |",
		"| N=2000: terminate-all server CPU per process, ms | 0.50 | – | – |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}
