// The scale group's table: medians over the rounds, ours beside the
// reference, with ours/ref (a ratio of the medians).

package main

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"sort"
)

// scaleLine is one row of the table.
type scaleLine struct {
	name      string
	ours, ref float64
}

func procsOK(r ScaleProcsRun) bool { return r.Error == "" }
func termOK(r ScaleProcsRun) bool  { return r.Error == "" && r.TermError == "" }
func connsOK(r ScaleConnsRun) bool { return r.Error == "" }

// scaleProcsLines are the rows of one N.
func scaleProcsLines(o, r []ScaleProcsRun, oBase, rBase []ScaleProcsRun, base int) []scaleLine {
	m := func(runs []ScaleProcsRun, f func(ScaleProcsRun) float64) float64 {
		return scaleMedian(runs, procsOK, f)
	}
	div := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return round3(a / b)
	}
	line := func(name string, f func(ScaleProcsRun) float64) scaleLine {
		return scaleLine{name, m(o, f), m(r, f)}
	}
	termLine := func(name string, f func(ScaleProcsRun) float64) scaleLine {
		v := func(runs []ScaleProcsRun) float64 {
			if !slices.ContainsFunc(runs, termOK) {
				return math.NaN() // no terminate-all finished: "–"
			}
			return scaleMedian(runs, termOK, f)
		}
		return scaleLine{name, v(o), v(r)}
	}
	connect := func(x ScaleProcsRun) float64 { return x.Connect }
	n := 0
	if len(o) > 0 {
		n = o[0].N
	} else if len(r) > 0 {
		n = r[0].N
	}
	out := []scaleLine{
		line("server RSS, MiB", func(x ScaleProcsRun) float64 { return round3(x.RSSKiB / 1024) }),
		line("RSS per process, KiB", func(x ScaleProcsRun) float64 { return x.RSSPerProc }),
		line("fds", func(x ScaleProcsRun) float64 { return x.FDs }),
		line("threads", func(x ScaleProcsRun) float64 { return x.Threads }),
		line("`/bin/true` start → response p50, ms", func(x ScaleProcsRun) float64 { return x.Start }),
		line("connect + initialize p50, ms", connect),
		line("connect + initialize p90, ms", func(x ScaleProcsRun) float64 { return x.Connect90 }),
		line("server CPU per connect + initialize, ms", func(x ScaleProcsRun) float64 { return x.ConnectCPU }),
	}
	if base != n && len(oBase)+len(rBase) > 0 {
		out = append(out, scaleLine{fmt.Sprintf("connect p50 / own at N=%d", base), div(m(o, connect), m(oBase, connect)), div(m(r, connect), m(rBase, connect))})
	}
	out = append(out,
		line("ramp: start p50 of the first W, ms", func(x ScaleProcsRun) float64 { return x.RampFirst }),
		line("ramp: start p50 of the last W, ms", func(x ScaleProcsRun) float64 { return x.RampLast }),
		line("ramp: server CPU per start, last W / first W", func(x ScaleProcsRun) float64 { return div(x.RampCPULast, x.RampCPUFirst) }),
		termLine("terminate-all, s", func(x ScaleProcsRun) float64 { return x.TermSeconds }),
		termLine("terminate-all server CPU per process, ms", func(x ScaleProcsRun) float64 { return x.TermCPU }),
	)
	return out
}

// scaleDetail writes the group's table (nothing when it did not run).
func scaleDetail(w io.Writer, o, r *Scale) {
	if o == nil || r == nil {
		return
	}
	row := func(prefix string, l scaleLine) {
		ratio := "–"
		if l.ref != 0 && !math.IsNaN(l.ours) && !math.IsNaN(l.ref) {
			ratio = fmt.Sprintf("%.2f×", l.ours/l.ref)
		}
		val := func(v float64) string {
			if math.IsNaN(v) {
				return "–"
			}
			return fmtVal(fp(v))
		}
		fmt.Fprintf(w, "| %s%s | %s | %s | %s |\n", prefix, l.name, val(l.ours), val(l.ref), ratio)
	}
	fmt.Fprintf(w, "\nScale (group `scale`), medians over the rounds; ours/ref is the ratio of the medians; W = min(%d, N/4):\n\n| row | ours | reference | ours/ref |\n|---|---:|---:|---:|\n", o.W)
	ns := sortedKeys(o.Procs, r.Procs)
	for _, n := range ns {
		base := ns[0]
		for _, l := range scaleProcsLines(o.Procs[n], r.Procs[n], o.Procs[base], r.Procs[base], base) {
			row(fmt.Sprintf("N=%d: ", n), l)
		}
	}
	for _, c := range sortedKeys(o.Conns, r.Conns) {
		m := func(f func(ScaleConnsRun) float64) scaleLine {
			return scaleLine{"", scaleMedian(o.Conns[c], connsOK, f), scaleMedian(r.Conns[c], connsOK, f)}
		}
		for _, x := range []struct {
			name string
			f    func(ScaleConnsRun) float64
		}{
			{"threads", func(x ScaleConnsRun) float64 { return x.Threads }},
			{"threads, peak while opening", func(x ScaleConnsRun) float64 { return x.ThreadsPeak }},
			{"RSS per connection, KiB", func(x ScaleConnsRun) float64 { return x.RSSPerConn }},
			{"dial + initialize p50 while opening, ms", func(x ScaleConnsRun) float64 { return x.Dial }},
			{"connect + initialize p50 with the C held, ms", func(x ScaleConnsRun) float64 { return x.Connect }},
		} {
			l := m(x.f)
			l.name = x.name
			row(fmt.Sprintf("C=%d: ", c), l)
		}
	}
	for i := range o.Streams {
		if i >= len(r.Streams) {
			break
		}
		of, rf := o.Streams[i], r.Streams[i]
		p := fmt.Sprintf("K=%d: ", of.K)
		row(p, scaleLine{"aggregate MiB/s", of.MiBps, rf.MiBps})
		row(p, scaleLine{"slowest/fastest", of.Spread, rf.Spread})
		row(p, scaleLine{"server CPU s per GiB", of.CPUGiB, rf.CPUGiB})
		if i > 0 && o.Streams[0].MiBps > 0 && r.Streams[0].MiBps > 0 {
			row(p, scaleLine{fmt.Sprintf("aggregate / K=%d", o.Streams[0].K), round3(of.MiBps / o.Streams[0].MiBps), round3(rf.MiBps / r.Streams[0].MiBps)})
		}
	}
	if runs := o.Conns[300]; len(runs) > 0 {
		lim := 2*runtime.GOMAXPROCS(0) + 16
		th := scaleMedian(runs, connsOK, func(x ScaleConnsRun) float64 { return x.Threads })
		pk := scaleMedian(runs, connsOK, func(x ScaleConnsRun) float64 { return x.ThreadsPeak })
		fmt.Fprintf(w, "\nThreads at 300 connections, ours: %.0f (peak %.0f); target ≤ 2×GOMAXPROCS+16 = %d (GOMAXPROCS of this machine): %s\n", th, pk, lim, map[bool]string{true: "pass", false: "FAIL"}[pk <= float64(lim)])
	}
}

// sortedKeys is the union of the maps' keys in ascending order.
func sortedKeys[V any](a, b map[int]V) []int {
	seen := map[int]bool{}
	var out []int
	for _, m := range []map[int]V{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Ints(out)
	return out
}
