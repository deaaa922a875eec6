// Teardown: N idle processes on one connection terminated at once, with the
// server's CPU time and write-like system calls (/proc/<pid>/io syscw) per
// terminated process.

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// TeardownRun is one terminate-all of N processes.
type TeardownRun struct {
	N          int     `json:"n"`
	Seconds    float64 `json:"seconds"`           // first terminate sent → last closed
	CPUPerProc float64 `json:"server_cpu_ms_per"` // server CPU per terminated process
	WritesPer  float64 `json:"server_syscw_per"`  // write-like syscalls per terminated process
	// SchedCPUPer is CPUPerProc read from the threads' schedstat (run time
	// in ns) instead of the process's clock ticks (10 ms: 0.05 ms per
	// process at N=200). A thread that ends inside the window loses what
	// it ran there; servers rarely end threads while busy.
	SchedCPUPer float64 `json:"server_sched_cpu_ms_per"`
	// CycleCPUPer is the server's CPU (schedstat) from before the first
	// start to the last closed, per process: a cost moved from the
	// teardown to the start path shows here.
	CycleCPUPer float64 `json:"server_cycle_cpu_ms_per"`
	// The ramp: the processes start one after the other, each start
	// awaited; the first and the last N/8 starts are timed (wall clock and
	// the server's CPU), so that a cost growing with N shows as a ratio.
	FirstStartsMs float64 `json:"first_starts_ms"`     // the first N/8 starts, wall
	LastStartsMs  float64 `json:"last_starts_ms"`      // the last N/8 starts, wall
	FirstStartCPU float64 `json:"first_starts_cpu_ms"` // the server's CPU over the first N/8
	LastStartCPU  float64 `json:"last_starts_cpu_ms"`  // the server's CPU over the last N/8
	Error         string  `json:"error,omitempty"`
}

// Teardown summarises the runs (medians).
type Teardown struct {
	N          int           `json:"n"`
	Runs       []TeardownRun `json:"runs"`
	CPUPerProc float64       `json:"median_server_cpu_ms_per"`
	SchedCPU   float64       `json:"median_server_sched_cpu_ms_per"` // the same from schedstat
	CycleCPU   float64       `json:"median_server_cycle_cpu_ms_per"` // start + terminate, per process
	WritesPer  float64       `json:"median_server_syscw_per"`
	RampWall   float64       `json:"median_ramp_last_over_first"`     // last N/8 starts / first N/8, wall
	RampCPU    float64       `json:"median_ramp_cpu_last_over_first"` // the same in server CPU
}

func (d *Teardown) add(r TeardownRun) {
	d.Runs = append(d.Runs, r)
	var cpu, sc, cc, w, rw, rc []float64
	for _, r := range d.Runs {
		if r.Error == "" {
			cpu = append(cpu, r.CPUPerProc)
			sc = append(sc, r.SchedCPUPer)
			cc = append(cc, r.CycleCPUPer)
			w = append(w, r.WritesPer)
			rw = append(rw, r.rampWall())
			rc = append(rc, r.rampCPU())
		}
	}
	d.CPUPerProc, d.WritesPer = round3(median(cpu)), round3(median(w))
	d.SchedCPU, d.CycleCPU = round3(median(sc)), round3(median(cc))
	d.RampWall, d.RampCPU = round3(median(rw)), round3(median(rc))
}

func (r TeardownRun) rampWall() float64 { return divOr0(r.LastStartsMs, r.FirstStartsMs) }
func (r TeardownRun) rampCPU() float64  { return divOr0(r.LastStartCPU, r.FirstStartCPU) }

func divOr0(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

// procSyscw is the write-like system calls pid has made.
func procSyscw(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "syscw: "); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("no syscw in /proc/%d/io", pid)
}

// teardownRun starts n `sleep 1000` on a new connection, then terminates
// them all at once and waits for every process/closed.
func teardownRun(ctx context.Context, t *Target, n int, perfCtl string) TeardownRun {
	run := TeardownRun{N: n}
	c, err := t.dial(ctx)
	if err != nil {
		run.Error = err.Error()
		return run
	}
	defer c.Close()
	procs := make([]*Proc, 0, n)
	seg := max(n/8, 1)
	cycle0 := threadsRuntime(t.Srv.Pid)
	var segT time.Time
	var segCPU time.Duration
	for i := range n {
		if i == 0 || i == n-seg {
			segT = time.Now()
			segCPU, _ = procCPU(t.Srv.Pid)
		}
		p, _, err := c.Start(ctx, []string{"/bin/sleep", "1000"}, false, false)
		if err != nil {
			run.Error = err.Error()
			break
		}
		procs = append(procs, p)
		if i == seg-1 || i == n-1 {
			wall := float64(time.Since(segT).Microseconds()) / 1000
			cpu, _ := procCPU(t.Srv.Pid)
			ms := float64((cpu - segCPU).Microseconds()) / 1000
			if i == seg-1 {
				run.FirstStartsMs, run.FirstStartCPU = round3(wall), round3(ms)
			} else {
				run.LastStartsMs, run.LastStartCPU = round3(wall), round3(ms)
			}
		}
	}
	defer func() {
		for _, p := range procs {
			t.cleanup(c, p)
		}
	}()
	if run.Error != "" {
		return run
	}
	time.Sleep(200 * time.Millisecond) // let the spawns settle
	cpu0, _ := procCPU(t.Srv.Pid)
	w0, err := procSyscw(t.Srv.Pid)
	if err != nil {
		run.Error = err.Error()
		return run
	}
	perfControl(perfCtl, "enable")
	defer perfControl(perfCtl, "disable")
	sched0 := threadsRuntime(t.Srv.Pid)
	t0 := time.Now()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Terminate(ctx, p); err != nil {
				errs[i] = err
				return
			}
			errs[i] = p.Wait(ctx, 60*time.Second)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		run.Error = err.Error()
		return run
	}
	var last time.Time
	for _, p := range procs {
		if p.ClosedAt.After(last) {
			last = p.ClosedAt
		}
	}
	cpu1, _ := procCPU(t.Srv.Pid)
	sched1 := threadsRuntime(t.Srv.Pid)
	w1, _ := procSyscw(t.Srv.Pid)
	run.SchedCPUPer = round3(float64(runtimeSince(sched0, sched1).Microseconds()) / 1000 / float64(n))
	run.CycleCPUPer = round3(float64(runtimeSince(cycle0, sched1).Microseconds()) / 1000 / float64(n))
	run.Seconds = round3(last.Sub(t0).Seconds())
	run.CPUPerProc = round3(float64((cpu1 - cpu0).Microseconds()) / 1000 / float64(n))
	run.WritesPer = round3(float64(w1-w0) / float64(n))
	return run
}

// runTeardown measures terminate-all of TeardownN processes, every subject
// in turn per round.
func (b *Bench) runTeardown(ctx context.Context) {
	ts := b.targets()
	if b.cfg.TeardownNoRef {
		ts = []*Target{b.ours}
	}
	if b.base != nil {
		ts = append(ts, b.base)
	}
	res := map[*Target]*Teardown{}
	for _, t := range ts {
		res[t] = &Teardown{N: b.cfg.TeardownN}
	}
	logf("teardown: N=%d, %d rounds", b.cfg.TeardownN, b.cfg.FairRounds)
	for r := range b.cfg.FairRounds {
		for _, i := range order(len(ts), r) {
			if ctx.Err() != nil {
				return
			}
			t := ts[i]
			run := teardownRun(ctx, t, b.cfg.TeardownN, b.cfg.TeardownPerf)
			if run.Error != "" {
				t.setError("teardown", errors.New(run.Error))
			}
			res[t].add(run)
			logf("teardown: %-5s N=%d  ramp first/last %d starts %.0f/%.0f ms (%.2f×), server CPU %.0f/%.0f ms (%.2f×)",
				t.Role, run.N, max(run.N/8, 1), run.FirstStartsMs, run.LastStartsMs, run.rampWall(), run.FirstStartCPU, run.LastStartCPU, run.rampCPU())
			logf("teardown: %-5s N=%d  %.3f s  cpu %.3f ms/process (schedstat %.3f; start+terminate %.3f)  syscw %.2f/process  load %s %s",
				t.Role, run.N, run.Seconds, run.CPUPerProc, run.SchedCPUPer, run.CycleCPUPer, run.WritesPer, loadAvg(), run.Error)
		}
	}
	for _, t := range ts {
		t.Res.Metrics.Teardown = res[t]
		logf("teardown: %-5s N=%d median cpu %.3f ms/process (schedstat %.3f; start+terminate %.3f)  syscw %.2f/process  ramp last/first %.2f× wall, %.2f× CPU",
			t.Role, res[t].N, res[t].CPUPerProc, res[t].SchedCPU, res[t].CycleCPU, res[t].WritesPer, res[t].RampWall, res[t].RampCPU)
	}
}

// perfControl sends cmd (enable, disable) to the control FIFO of a perf
// record, if one reads it; without a reader (no perf, or perf attached to
// another subject's server) it does nothing.
func perfControl(fifo, cmd string) {
	if fifo == "" {
		return
	}
	f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.WriteString(cmd + "\n")
}

// threadsRuntime returns the run time (ns, /proc/<pid>/task/<tid>/schedstat)
// of each thread of pid.
func threadsRuntime(pid int) map[string]int64 {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	out := make(map[string]int64, len(ents))
	for _, e := range ents {
		f := strings.Fields(readTrim(dir + "/" + e.Name() + "/schedstat"))
		if len(f) == 0 {
			continue
		}
		if ns, err := strconv.ParseInt(f[0], 10, 64); err == nil {
			out[e.Name()] = ns
		}
	}
	return out
}

// runtimeSince is the run time the threads of b added since a; a thread
// new in b counts whole.
func runtimeSince(a, b map[string]int64) time.Duration {
	var d int64
	for tid, ns := range b {
		d += ns - a[tid]
	}
	return time.Duration(d)
}
