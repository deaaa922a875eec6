// The paired PTY throughput group (issue 22 item 7): many short rounds of
// `head -c SIZE /dev/zero` with tty:true, every subject once per round in a
// rotating order, so that a shared, loaded machine affects the sides alike;
// the result is the median of the per-round ratios, with the server CPU per
// MiB and the load average of each round.

package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// PTYPairedRun is one subject's run in one round.
type PTYPairedRun struct {
	MiBps     float64 `json:"mib_s"`
	CPUPerMiB float64 `json:"server_cpu_ms_per_mib,omitempty"` // servers only
	Chunks    int     `json:"chunks,omitempty"`
	AvgChunk  float64 `json:"avg_chunk_bytes,omitempty"`
	CSwPerMiB float64 `json:"server_context_switches_per_mib,omitempty"` // servers only: voluntary + involuntary, summed over the live threads
	Error     string  `json:"error,omitempty"`
}

// PTYPairedRound is one round: every subject once, and the load average
// when it ended.
type PTYPairedRound struct {
	Runs map[string]PTYPairedRun `json:"runs"`
	Load string                  `json:"load_1m"`
}

// PTYPaired is the group's result.
type PTYPaired struct {
	Size   int64              `json:"size"`
	Rounds []PTYPairedRound   `json:"rounds"`
	MiBps  map[string]float64 `json:"median_mib_s"`
	CPU    map[string]float64 `json:"median_server_cpu_ms_per_mib"`
	CSw    map[string]float64 `json:"median_server_context_switches_per_mib"`
	Ratios map[string]float64 `json:"median_paired_ratio"` // "a/b": median over rounds of a's MiB/s over b's
}

// runPTYPaired runs the rounds and logs every one and the medians.
func (b *Bench) runPTYPaired(ctx context.Context) {
	type subject struct {
		name string
		t    *Target // nil: a Go floor
	}
	subs := []subject{{"ours", b.ours}}
	if b.base != nil {
		subs = append(subs, subject{"base", b.base})
	}
	subs = append(subs, subject{"ref", b.ref}, subject{"floor", nil}, subject{"floor-blocking", nil})
	size := b.cfg.PTYPairedSize
	res := &PTYPaired{Size: size, MiBps: map[string]float64{}, CPU: map[string]float64{}, CSw: map[string]float64{}, Ratios: map[string]float64{}}
	logf("ptypaired: head -c %d MiB, tty, %d rounds of %d subjects", size>>20, b.cfg.PTYPairedRounds, len(subs))
	for r := range b.cfg.PTYPairedRounds {
		round := PTYPairedRound{Runs: map[string]PTYPairedRun{}}
		for _, i := range order(len(subs), r) {
			if ctx.Err() != nil {
				return
			}
			s := subs[i]
			var run PTYPairedRun
			if s.t == nil {
				run = ptyFloorRun(ctx, s.name == "floor-blocking", size)
			} else {
				run = ptyServerRun(ctx, s.t, size)
				if run.Error != "" {
					s.t.setError("pty_paired", fmt.Errorf("%s", run.Error))
				}
			}
			round.Runs[s.name] = run
		}
		round.Load = loadAvg()
		res.Rounds = append(res.Rounds, round)
		line := fmt.Sprintf("ptypaired: round %2d load %s", r+1, round.Load)
		for _, s := range subs {
			run := round.Runs[s.name]
			line += fmt.Sprintf("  %s %6.1f", s.name, run.MiBps)
			if run.CPUPerMiB > 0 {
				line += fmt.Sprintf(" (%.1f ms %.0f csw /MiB)", run.CPUPerMiB, run.CSwPerMiB)
			}
		}
		logf("%s", line)
	}
	names := make([]string, len(subs))
	for i, s := range subs {
		names[i] = s.name
	}
	pairs := [][2]string{{"ours", "ref"}, {"ours", "floor"}, {"ref", "floor"}, {"floor-blocking", "floor"}}
	if b.base != nil {
		pairs = append(pairs, [2]string{"base", "ref"}, [2]string{"ours", "base"})
	}
	for _, n := range names {
		var rate, cpu, csw []float64
		for _, rd := range res.Rounds {
			if run := rd.Runs[n]; run.Error == "" && run.MiBps > 0 {
				rate = append(rate, run.MiBps)
				if run.CPUPerMiB > 0 {
					cpu = append(cpu, run.CPUPerMiB)
					csw = append(csw, run.CSwPerMiB)
				}
			}
		}
		res.MiBps[n] = round3(median(rate))
		if len(cpu) > 0 {
			res.CPU[n] = round3(median(cpu))
			res.CSw[n] = round3(median(csw))
		}
	}
	for _, p := range pairs {
		var ratios []float64
		for _, rd := range res.Rounds {
			a, b := rd.Runs[p[0]], rd.Runs[p[1]]
			if a.Error == "" && b.Error == "" && a.MiBps > 0 && b.MiBps > 0 {
				ratios = append(ratios, a.MiBps/b.MiBps)
			}
		}
		res.Ratios[p[0]+"/"+p[1]] = round3(median(ratios))
	}
	for _, n := range names {
		logf("ptypaired: %-14s median %6.1f MiB/s  cpu %.2f ms/MiB  %.0f context switches/MiB", n, res.MiBps[n], res.CPU[n], res.CSw[n])
	}
	for _, p := range pairs {
		k := p[0] + "/" + p[1]
		logf("ptypaired: median paired ratio %-20s %.3f", k, res.Ratios[k])
	}
	b.ours.Res.Metrics.PTYPaired = res
}

// ptyServerRun is one `head -c size /dev/zero` with tty:true on t, with the
// server's CPU time over the run.
func ptyServerRun(ctx context.Context, t *Target, size int64) PTYPairedRun {
	cpu0, _ := procCPU(t.Srv.Pid)
	csw0 := ctxSwitches(t.Srv.Pid)
	tr, _, err := throughputRun(ctx, t, true, size)
	cpu1, _ := procCPU(t.Srv.Pid)
	csw1 := ctxSwitches(t.Srv.Pid)
	run := PTYPairedRun{MiBps: tr.MiBps, Chunks: tr.Chunks, AvgChunk: tr.AvgChunk, Error: tr.FirstError}
	if err != nil {
		run.Error = err.Error()
	}
	if tr.Bytes > 0 {
		mib := float64(tr.Bytes) / (1 << 20)
		run.CPUPerMiB = round3(float64((cpu1 - cpu0).Milliseconds()) / mib)
		run.CSwPerMiB = round3(float64(csw1-csw0) / mib)
	}
	return run
}

// ptyFloorRun is the Go floor: creack/pty and 64 KiB reads of the master,
// through the netpoller, or with blocking reads on the calling thread.
func ptyFloorRun(ctx context.Context, blocking bool, size int64) PTYPairedRun {
	var tr ThroughputRun
	var err error
	if blocking {
		tr, err = floorPTYReadBlocking(ctx, size)
	} else {
		tr, err = floorPTYRead(ctx, size)
	}
	run := PTYPairedRun{MiBps: tr.MiBps}
	if err != nil {
		run.Error = err.Error()
	}
	return run
}

// ctxSwitches sums the voluntary and involuntary context switches of pid's
// live threads.
func ctxSwitches(pid int) int64 {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var n int64
	for _, e := range ents {
		for _, line := range strings.Split(readTrim(dir+"/"+e.Name()+"/status"), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.HasSuffix(k, "ctxt_switches") {
				x, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				n += x
			}
		}
	}
	return n
}
