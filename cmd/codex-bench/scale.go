// The scale group: how each server's cost grows with the work it holds.
// Three families, every subject in turn per round:
//
//   - N live processes: a fresh server ramps to N `/bin/sleep 1000`, then
//     its RSS, fds and threads are read, starts of `/bin/true` and new
//     connections (connect + initialize) are timed with the N alive, and
//     all N are terminated at once (time and server CPU);
//   - C idle connections: a fresh server gets C connections (dialled
//     ScaleDialPar at a time); its threads (peak and after), RSS per
//     connection, and the connect latency with the C held;
//   - K streams on one connection: the fairness run (fairness.go).

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ScaleConfig holds the scale group's counts.
type ScaleConfig struct {
	Ns       []int // live processes
	Cs       []int // idle connections
	Ks       []int // streams on one connection
	Size     int64 // bytes per stream
	Rounds   int
	W        int // ramp starts timed at each end (W = min(W, N/4))
	Connects int // connect samples at each N and C
	Starts   int // /bin/true start samples at each N
	DialPar  int // connections dialled at once in the C family
	// Sandboxed runs the N live processes (ramp and timed starts) under
	// workspace-write, as the real Codex CLI starts its commands.
	Sandboxed bool
}

// sleepParams are the parameters of one of the N live processes.
func (sc ScaleConfig) sleepParams() StartParams {
	p := StartParams{Argv: []string{"/bin/sleep", "1000"}, Cwd: "file:///tmp", Env: benchEnv}
	if sc.Sandboxed {
		p.Sandbox = workspaceSandbox("/tmp", "", false)
	}
	return p
}

// scaleDefaults are the counts of a default run (a few minutes); scaleFull
// the ones of -scale-full.
func scaleDefaults(full bool) ScaleConfig {
	if full {
		return ScaleConfig{Ns: []int{10, 100, 500, 1000, 2000, 4000}, Cs: []int{1, 10, 100, 300}, Ks: []int{1, 10, 25, 50},
			Size: 64 << 20, Rounds: 3, W: 250, Connects: 30, Starts: 30, DialPar: 16}
	}
	return ScaleConfig{Ns: []int{10, 200, 1000}, Cs: []int{1, 100, 300}, Ks: []int{1, 10, 50},
		Size: 16 << 20, Rounds: 2, W: 100, Connects: 20, Starts: 20, DialPar: 16}
}

// parseCounts parses a comma-separated list of positive integers.
func parseCounts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bad count %q", f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, errors.New("empty list")
	}
	return out, nil
}

// ScaleProcsRun is one ramp of a fresh server to N live processes.
type ScaleProcsRun struct {
	N            int     `json:"n"`
	RSSKiB       float64 `json:"rss_kib"`          // server VmRSS at N
	RSSPerProc   float64 `json:"rss_kib_per_proc"` // (RSS at N − RSS before) / N
	FDs          float64 `json:"fds"`
	Threads      float64 `json:"threads"`
	RampFirst    float64 `json:"ramp_first_p50_ms"`    // start → response, first W starts of the ramp
	RampLast     float64 `json:"ramp_last_p50_ms"`     // the last W
	RampCPUFirst float64 `json:"ramp_first_cpu_ms"`    // server CPU per start, first W
	RampCPULast  float64 `json:"ramp_last_cpu_ms"`     // the last W
	Start        float64 `json:"start_p50_ms"`         // /bin/true start → response with N alive
	Connect      float64 `json:"connect_p50_ms"`       // connect + initialize with N alive
	Connect90    float64 `json:"connect_p90_ms"`       //
	ConnectCPU   float64 `json:"connect_cpu_ms"`       // server CPU per connect + initialize (+ close)
	TermSeconds  float64 `json:"terminate_all_s"`      // first terminate sent → last closed
	TermCPU      float64 `json:"terminate_cpu_ms_per"` // server CPU per terminated process
	TermError    string  `json:"terminate_error,omitempty"`
	Load         string  `json:"load"`
	Error        string  `json:"error,omitempty"`
}

// ScaleConnsRun is one fresh server holding C idle connections.
type ScaleConnsRun struct {
	C           int     `json:"c"`
	Threads     float64 `json:"threads"`      // after the C are open
	ThreadsPeak float64 `json:"threads_peak"` // while they were opened
	RSSPerConn  float64 `json:"rss_kib_per_conn"`
	Dial        float64 `json:"dial_p50_ms"`    // the C dials, DialPar at a time
	Connect     float64 `json:"connect_p50_ms"` // sequential connects with the C held
	Load        string  `json:"load"`
	Error       string  `json:"error,omitempty"`
}

// Scale is the group's results for one server.
type Scale struct {
	W       int                     `json:"w"` // ramp starts timed at each end
	Procs   map[int][]ScaleProcsRun `json:"procs"`
	Conns   map[int][]ScaleConnsRun `json:"conns"`
	Streams []*Fairness             `json:"streams"`
}

// scaleMedian is the median over the error-free runs of f.
func scaleMedian[R any](runs []R, ok func(R) bool, f func(R) float64) float64 {
	var v []float64
	for _, r := range runs {
		if ok(r) {
			v = append(v, f(r))
		}
	}
	return round3(median(v))
}

// durationsP50 and durationsP90 are nearest-rank quantiles in milliseconds.
func durationsQ(d []time.Duration, q float64) float64 {
	v := make([]float64, len(d))
	for i, x := range d {
		v[i] = ms(x)
	}
	sort.Float64s(v)
	return round3(quantile(v, q))
}

// threadsCPU is the CPU time pid's live threads have used, in
// nanoseconds (the sum of /proc/<pid>/task/*/schedstat), or 0: finer than
// /proc/<pid>/stat's 10 ms ticks, for costs of a millisecond.
func threadsCPU(pid int) time.Duration {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var sum time.Duration
	for _, e := range ents {
		data, err := os.ReadFile(dir + "/" + e.Name() + "/schedstat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(data))
		if len(f) == 0 {
			continue
		}
		ns, _ := strconv.ParseInt(f[0], 10, 64)
		sum += time.Duration(ns)
	}
	return sum
}

// threadsOf reads the server's thread count (0 when unreadable).
func threadsOf(pid int) int {
	st, err := readProcStatus(pid)
	if err != nil {
		return 0
	}
	return st.Threads
}

// freshScaleServer starts a new server like t's, warms it up a little (so
// that its first connection's and start's set-up is not counted) and reads
// its status before the run; stop it with the returned function, which also
// merges its checks into t.
func (b *Bench) freshScaleServer(ctx context.Context, t *Target) (fresh *Target, before ProcStatus, stop func(), err error) {
	fresh, err = b.startTarget(ctx, t.Role+"-scale", t.Res.Server, t.Res.Binary, nil, t.viol)
	if err != nil {
		return nil, before, nil, err
	}
	stop = func() {
		b.stopTarget(fresh)
		mergeChecks(t, fresh)
	}
	if _, err = connectSamples(ctx, fresh, 3); err == nil {
		time.Sleep(100 * time.Millisecond)
		before, err = readProcStatus(fresh.Srv.Pid)
	}
	if err != nil {
		stop()
		return nil, before, nil, err
	}
	return fresh, before, stop, nil
}

// connectSamples times n sequential connect + initialize on t, closing each.
func connectSamples(ctx context.Context, t *Target, n int) ([]time.Duration, error) {
	var out []time.Duration
	for range n {
		t0 := time.Now()
		c, err := t.dial(ctx)
		if err != nil {
			return out, err
		}
		out = append(out, time.Since(t0))
		c.Close()
	}
	return out, nil
}

// scaleProcsPerConn is how many processes one ramp connection holds.
const scaleProcsPerConn = 500

// scaleRampWindow is how many untimed ramp starts are in flight at once:
// one, as a client that waits for each answer (the reference serves one
// start at a time anyway).
const scaleRampWindow = 1

// scaleRampMiddle starts procs[from:to] (`/bin/sleep 1000`), each on its
// connection (conns[i/scaleProcsPerConn]), scaleRampWindow in flight, one
// connection at a time.
func scaleRampMiddle(ctx context.Context, sc ScaleConfig, conns []*Client, procs []*Proc, from, to int) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs error
	sem := make(chan struct{}, scaleRampWindow)
	for i := from; i < to && ctx.Err() == nil; i++ {
		if i > from && i%scaleProcsPerConn == 0 {
			wg.Wait()
		}
		c := conns[i/scaleProcsPerConn]
		p, ch, err := c.StartAsync(ctx, sc.sleepParams(), false)
		if err != nil {
			mu.Lock()
			errs = errors.Join(errs, err)
			mu.Unlock()
			break
		}
		procs[i] = p
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			r, err := c.Await(ctx, ch)
			if err == nil && r.Err != nil {
				err = r.Err
			}
			if err != nil {
				mu.Lock()
				errs = errors.Join(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs, ctx.Err())
}

// scaleProcsRun ramps a fresh server like t's to n sleeping processes and
// measures it there.
func (b *Bench) scaleProcsRun(ctx context.Context, t *Target, sc ScaleConfig, n int) (run ScaleProcsRun) {
	run.N = n
	fresh, before, stop, err := b.freshScaleServer(ctx, t)
	if err != nil {
		run.Error = err.Error()
		return run
	}
	defer stop()
	pid := fresh.Srv.Pid
	// Processes are spread over connections of scaleProcsPerConn each.
	conns := make([]*Client, (n+scaleProcsPerConn-1)/scaleProcsPerConn)
	procs := make([]*Proc, n)
	connOf := func(i int) *Client { return conns[i/scaleProcsPerConn] }
	defer func() {
		var wg sync.WaitGroup
		for i, p := range procs {
			if p == nil {
				continue
			}
			select {
			case <-p.Closed():
			default:
				wg.Go(func() { fresh.cleanup(connOf(i), p) })
			}
		}
		wg.Wait()
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	for i := range conns {
		if conns[i], err = fresh.dial(ctx); err != nil {
			run.Error = err.Error()
			return run
		}
	}
	// The first and the last W starts go one at a time, timed, with the
	// server's CPU read around them; the starts in between are not timed.
	w := max(1, min(sc.W, n/4))
	var lat []time.Duration
	timed := func(i int) error {
		p, r, err := connOf(i).StartWith(ctx, sc.sleepParams(), false)
		if err != nil {
			return err
		}
		procs[i] = p
		lat = append(lat, r.At.Sub(p.Start))
		return nil
	}
	var cpu [4]time.Duration
	cpu[0], _ = procCPU(pid)
	for i := range w {
		if err := timed(i); err != nil {
			run.Error = err.Error()
			return run
		}
	}
	cpu[1], _ = procCPU(pid)
	if err := scaleRampMiddle(ctx, sc, conns, procs, w, n-w); err != nil {
		run.Error = err.Error()
		return run
	}
	cpu[2], _ = procCPU(pid)
	for i := max(w, n-w); i < n; i++ {
		if err := timed(i); err != nil {
			run.Error = err.Error()
			return run
		}
	}
	cpu[3], _ = procCPU(pid)
	run.RampFirst, run.RampLast = durationsQ(lat[:w], 0.5), durationsQ(lat[len(lat)-w:], 0.5)
	run.RampCPUFirst = round3(float64((cpu[1] - cpu[0]).Microseconds()) / 1000 / float64(w))
	run.RampCPULast = round3(float64((cpu[3] - cpu[2]).Microseconds()) / 1000 / float64(w))
	time.Sleep(300 * time.Millisecond) // let the spawns settle
	at, err := readProcStatus(pid)
	if err != nil {
		run.Error = err.Error()
		return run
	}
	run.RSSKiB, run.FDs, run.Threads = float64(at.RSSKiB), float64(at.FDs), float64(at.Threads)
	run.RSSPerProc = round3(float64(at.RSSKiB-before.RSSKiB) / float64(n))

	// /bin/true starts with the N alive, on the server's main connection.
	main, err := fresh.client(ctx)
	if err != nil {
		run.Error = err.Error()
		return run
	}
	var starts []time.Duration
	for range sc.Starts {
		p, r, err := main.Start(ctx, []string{"/bin/true"}, false, false)
		if err != nil {
			run.Error = err.Error()
			return run
		}
		starts = append(starts, r.At.Sub(p.Start))
		if err := p.Wait(ctx, 30*time.Second); err != nil {
			fresh.cleanup(main, p)
			run.Error = err.Error()
			return run
		}
		fresh.checkExit(p, 0, "/bin/true at N")
	}
	run.Start = durationsQ(starts, 0.5)

	c0 := threadsCPU(pid)
	conn, err := connectSamples(ctx, fresh, sc.Connects)
	if err != nil {
		run.Error = err.Error()
		return run
	}
	if c1 := threadsCPU(pid); c0 > 0 && c1 > c0 {
		run.ConnectCPU = round3(float64((c1 - c0).Microseconds()) / 1000 / float64(len(conn)))
	}
	run.Connect, run.Connect90 = durationsQ(conn, 0.5), durationsQ(conn, 0.9)

	// Terminate all N, scaleTermInFlight requests at a time, within
	// scaleTermWithin; a failure here is the row's TermError and leaves
	// the rows measured above standing.
	run.Load = loadAvg()
	tctx, cancel := context.WithTimeout(ctx, scaleTermWithin)
	defer cancel()
	cpu0, _ := procCPU(pid)
	t0 := time.Now()
	errs := make([]error, len(procs))
	sem := make(chan struct{}, scaleTermInFlight)
	var wg sync.WaitGroup
	for i, p := range procs {
		sem <- struct{}{}
		wg.Go(func() {
			_, err := connOf(i).Terminate(tctx, p)
			<-sem
			if err != nil {
				errs[i] = fmt.Errorf("terminate %s: %w", p.ID, err)
				return
			}
			errs[i] = p.Wait(tctx, scaleTermWithin)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		closed := 0
		for _, p := range procs {
			select {
			case <-p.Closed():
				closed++
			default:
			}
		}
		run.TermError = fmt.Sprintf("%d of %d closed within %v; first error: %v", closed, n, scaleTermWithin, firstErr(errs))
		return run
	}
	var last time.Time
	for _, p := range procs {
		if p.ClosedAt.After(last) {
			last = p.ClosedAt
		}
	}
	cpu1, _ := procCPU(pid)
	run.TermSeconds = round3(last.Sub(t0).Seconds())
	run.TermCPU = round3(float64((cpu1 - cpu0).Microseconds()) / 1000 / float64(n))
	return run
}

// firstErr is the first non-nil error of errs.
func firstErr(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Terminate-all: requests in flight at once, and how long it may take. The
// reference, sent 2,000 at once on four connections, answered some, sent
// no process/closed for the others within two minutes and stopped reading
// its connections (2026-11-29).
const (
	scaleTermInFlight = 64
	scaleTermWithin   = 60 * time.Second
)

// scaleConnsRun opens c idle connections to a fresh server like t's.
func (b *Bench) scaleConnsRun(ctx context.Context, t *Target, sc ScaleConfig, c int) (run ScaleConnsRun) {
	run.C = c
	fresh, before, stop, err := b.freshScaleServer(ctx, t)
	if err != nil {
		run.Error = err.Error()
		return run
	}
	defer stop()
	pid := fresh.Srv.Pid
	// Sample the thread count every 5 ms while the connections open.
	var peak atomic.Int64
	sampleDone, sampleStop := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampleDone)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			if n := int64(threadsOf(pid)); n > peak.Load() {
				peak.Store(n)
			}
			select {
			case <-sampleStop:
				return
			case <-tick.C:
			}
		}
	}()
	conns := make([]*Client, c)
	dials := make([]time.Duration, c)
	errs := make([]error, c)
	sem := make(chan struct{}, max(1, sc.DialPar))
	var wg sync.WaitGroup
	for i := range c {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			t0 := time.Now()
			conns[i], errs[i] = fresh.dial(ctx)
			dials[i] = time.Since(t0)
		}()
	}
	wg.Wait()
	defer func() {
		for _, cl := range conns {
			if cl != nil {
				cl.Close()
			}
		}
	}()
	time.Sleep(300 * time.Millisecond)
	close(sampleStop)
	<-sampleDone
	if err := errors.Join(errs...); err != nil {
		run.Error = err.Error()
		return run
	}
	at, err := readProcStatus(pid)
	if err != nil {
		run.Error = err.Error()
		return run
	}
	run.Threads, run.ThreadsPeak = float64(at.Threads), float64(max(peak.Load(), int64(at.Threads)))
	run.RSSPerConn = round3(float64(at.RSSKiB-before.RSSKiB) / float64(c))
	run.Dial = durationsQ(dials, 0.5)
	conn, err := connectSamples(ctx, fresh, sc.Connects)
	if err != nil {
		run.Error = err.Error()
		return run
	}
	run.Connect = durationsQ(conn, 0.5)
	run.Load = loadAvg()
	return run
}

// runScale runs the three families, every subject in turn per round.
func (b *Bench) runScale(ctx context.Context) {
	sc := b.cfg.Scale
	ts := b.targets()
	if b.base != nil {
		ts = append(ts, b.base)
	}
	res := map[*Target]*Scale{}
	for _, t := range ts {
		s := &Scale{W: sc.W, Procs: map[int][]ScaleProcsRun{}, Conns: map[int][]ScaleConnsRun{}}
		for _, k := range sc.Ks {
			s.Streams = append(s.Streams, &Fairness{K: k, Size: sc.Size})
		}
		res[t] = s
		t.Res.Metrics.Scale = s
	}
	logf("scale: N=%v (sandboxed %v) C=%v K=%v × %d MiB, %d rounds", sc.Ns, sc.Sandboxed, sc.Cs, sc.Ks, sc.Size>>20, sc.Rounds)
	for r := range sc.Rounds {
		for _, n := range sc.Ns {
			for _, i := range order(len(ts), r) {
				if ctx.Err() != nil {
					return
				}
				t := ts[i]
				run := b.scaleProcsRun(ctx, t, sc, n)
				if run.Error != "" {
					t.setError(fmt.Sprintf("scale_procs_%d", n), errors.New(run.Error))
				}
				if run.TermError != "" {
					t.setError(fmt.Sprintf("scale_terminate_all_%d", n), errors.New(run.TermError))
				}
				res[t].Procs[n] = append(res[t].Procs[n], run)
				logf("scale: %-4s N=%-5d rss %.0f KiB (%.1f/proc) fds %.0f threads %.0f  ramp p50 %.2f→%.2f ms cpu %.3f→%.3f ms  start %.2f ms  connect %.2f/%.2f ms (cpu %.3f ms)  terminate-all %.2f s %.3f ms/proc  load %s %s",
					t.Role, n, run.RSSKiB, run.RSSPerProc, run.FDs, run.Threads, run.RampFirst, run.RampLast, run.RampCPUFirst, run.RampCPULast,
					run.Start, run.Connect, run.Connect90, run.ConnectCPU, run.TermSeconds, run.TermCPU, loadAvg(), run.Error+run.TermError)
			}
		}
		for _, c := range sc.Cs {
			for _, i := range order(len(ts), r) {
				if ctx.Err() != nil {
					return
				}
				t := ts[i]
				run := b.scaleConnsRun(ctx, t, sc, c)
				if run.Error != "" {
					t.setError(fmt.Sprintf("scale_conns_%d", c), errors.New(run.Error))
				}
				res[t].Conns[c] = append(res[t].Conns[c], run)
				logf("scale: %-4s C=%-4d threads %.0f (peak %.0f)  rss %.1f KiB/conn  dial p50 %.2f ms  connect %.2f ms  load %s %s",
					t.Role, c, run.Threads, run.ThreadsPeak, run.RSSPerConn, run.Dial, run.Connect, loadAvg(), run.Error)
			}
		}
		for ki, k := range sc.Ks {
			for _, i := range order(len(ts), r) {
				if ctx.Err() != nil {
					return
				}
				t := ts[i]
				run := fairnessRun(ctx, t, k, sc.Size)
				if run.Error != "" {
					t.setError(fmt.Sprintf("scale_streams_%d", k), errors.New(run.Error))
				}
				res[t].Streams[ki].add(run)
				logf("scale: %-4s K=%-3d %7.1f MiB/s  slowest/fastest %.2f  cpu %.2f s  load %s %s",
					t.Role, k, run.MiBps, run.Spread, run.CPUSecond, loadAvg(), run.Error)
			}
		}
	}
	var sb strings.Builder
	scaleDetail(&sb, res[b.ours], res[b.ref])
	if b.base != nil {
		sb.WriteString("\nThe branch's base (\"base\") in the reference's column:\n")
		scaleDetail(&sb, res[b.ours], res[b.base])
	}
	for _, l := range strings.Split(strings.TrimSpace(sb.String()), "\n") {
		logf("%s", l)
	}
}
