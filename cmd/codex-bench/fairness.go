// Fairness of many output streams on one connection: K processes of
// `head -c SIZE /dev/zero` started at once on a fresh connection, each
// timed from its process/start to its process/closed.

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// FairnessRun is one run of K streams on one connection.
type FairnessRun struct {
	K         int     `json:"k"`
	Bytes     int64   `json:"bytes"`
	Seconds   float64 `json:"seconds"` // first start written → last closed
	MiBps     float64 `json:"mib_s"`   // aggregate
	Fastest   float64 `json:"fastest_s"`
	Slowest   float64 `json:"slowest_s"`
	Spread    float64 `json:"slowest_over_fastest"`
	CPUSecond float64 `json:"server_cpu_s,omitempty"`
	Error     string  `json:"error,omitempty"`
}

// Fairness summarises the runs of one K (medians).
type Fairness struct {
	K       int           `json:"k"`
	Size    int64         `json:"size"`
	Runs    []FairnessRun `json:"runs"`
	MiBps   float64       `json:"median_mib_s"`
	Spread  float64       `json:"median_slowest_over_fastest"`
	CPUGiB  float64       `json:"median_server_cpu_s_per_gib,omitempty"`
	Errors  int           `json:"errors,omitempty"`
	FirstEr string        `json:"error,omitempty"`
}

func (f *Fairness) add(r FairnessRun) {
	if r.Error != "" {
		f.Errors++
		if f.FirstEr == "" {
			f.FirstEr = r.Error
		}
	}
	f.Runs = append(f.Runs, r)
	var rate, spread, cpu []float64
	for _, r := range f.Runs {
		if r.Error != "" {
			continue
		}
		rate = append(rate, r.MiBps)
		spread = append(spread, r.Spread)
		if r.CPUSecond > 0 && r.Bytes > 0 {
			cpu = append(cpu, r.CPUSecond/(float64(r.Bytes)/(1<<30)))
		}
	}
	f.MiBps, f.Spread, f.CPUGiB = round3(median(rate)), round3(median(spread)), round3(median(cpu))
}

// fairnessRun starts k `head -c size /dev/zero` at once on a new connection
// and waits for all of them.
func fairnessRun(ctx context.Context, t *Target, k int, size int64) FairnessRun {
	run := FairnessRun{K: k}
	c, err := t.dial(ctx)
	if err != nil {
		run.Error = err.Error()
		return run
	}
	defer c.Close()
	cpu0, _ := procCPU(t.Srv.Pid)
	argv := []string{"/usr/bin/head", "-c", fmt.Sprint(size), "/dev/zero"}
	procs := make([]*Proc, k)
	errs := make([]error, k)
	var wg sync.WaitGroup
	for i := range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, _, err := c.Start(ctx, argv, false, false)
			if err != nil {
				errs[i] = err
				return
			}
			procs[i] = p
			if err := p.Wait(ctx, 300*time.Second); err != nil {
				t.cleanup(c, p)
				errs[i] = err
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		run.Error = err.Error()
		return run
	}
	cpu1, _ := procCPU(t.Srv.Pid)
	run.CPUSecond = round3((cpu1 - cpu0).Seconds())
	first, last := procs[0].Start, procs[0].ClosedAt
	fast, slow := time.Duration(1<<62), time.Duration(0)
	for _, p := range procs {
		t.checkExit(p, 0, "head -c")
		if p.Bytes != size && run.Error == "" {
			run.Error = fmt.Sprintf("%s: received %d bytes, want %d", p.ID, p.Bytes, size)
		}
		run.Bytes += p.Bytes
		if p.Start.Before(first) {
			first = p.Start
		}
		if p.ClosedAt.After(last) {
			last = p.ClosedAt
		}
		d := p.ClosedAt.Sub(p.Start)
		fast, slow = min(fast, d), max(slow, d)
	}
	if os.Getenv("FAIR_DEBUG") != "" {
		for _, p := range procs {
			logf("  %s start +%.3f first +%.3f closed +%.3f chunks %d", p.ID, p.Start.Sub(first).Seconds(), p.FirstOutput.Sub(first).Seconds(), p.ClosedAt.Sub(first).Seconds(), p.Chunks)
		}
	}
	d := last.Sub(first)
	run.Seconds = round3(d.Seconds())
	run.MiBps = round3(float64(run.Bytes) / (1 << 20) / d.Seconds())
	run.Fastest, run.Slowest = round3(fast.Seconds()), round3(slow.Seconds())
	run.Spread = round3(slow.Seconds() / fast.Seconds())
	return run
}

// runFairness measures K = FairKs streams of FairSize bytes on one
// connection, every subject in turn per round, and logs the table.
func (b *Bench) runFairness(ctx context.Context) {
	ts := b.targets()
	if b.base != nil {
		ts = append(ts, b.base)
	}
	res := map[*Target][]*Fairness{}
	for _, t := range ts {
		for _, k := range b.cfg.FairKs {
			res[t] = append(res[t], &Fairness{K: k, Size: b.cfg.FairSize})
		}
	}
	logf("fairness: K=%v × %d MiB, %d rounds", b.cfg.FairKs, b.cfg.FairSize>>20, b.cfg.FairRounds)
	for r := range b.cfg.FairRounds {
		for ki, k := range b.cfg.FairKs {
			for _, i := range order(len(ts), r) {
				if ctx.Err() != nil {
					return
				}
				t := ts[i]
				run := fairnessRun(ctx, t, k, b.cfg.FairSize)
				if run.Error != "" {
					t.setError(fmt.Sprintf("fairness_%d", k), errors.New(run.Error))
				}
				res[t][ki].add(run)
				logf("fairness: %-5s K=%-3d %7.1f MiB/s  slowest/fastest %.2f (%.2f/%.2f s)  cpu %.2f s  load %s %s",
					t.Role, k, run.MiBps, run.Spread, run.Slowest, run.Fastest, run.CPUSecond, loadAvg(), run.Error)
			}
		}
	}
	for _, t := range ts {
		t.Res.Metrics.Fairness = res[t]
		for _, f := range res[t] {
			logf("fairness: %-5s K=%-3d median %7.1f MiB/s  slowest/fastest %.2f  cpu/GiB %.2f s", t.Role, f.K, f.MiBps, f.Spread, f.CPUGiB)
		}
		if len(res[t]) >= 2 && res[t][0].MiBps > 0 {
			logf("fairness: %-5s K=%d/K=%d aggregate %.2f", t.Role, res[t][len(res[t])-1].K, res[t][0].K, res[t][len(res[t])-1].MiBps/res[t][0].MiBps)
		}
	}
}

// procCPU is the user+system CPU time pid has used (its own, not its
// children's).
func procCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	end := strings.LastIndexByte(string(data), ')')
	f := strings.Fields(string(data[end+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("bad stat for %d", pid)
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * (time.Second / 100), nil // USER_HZ = 100
}

// loadAvg is the 1-minute load average.
func loadAvg() string {
	f := strings.Fields(readTrim("/proc/loadavg"))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}
