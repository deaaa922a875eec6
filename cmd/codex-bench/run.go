package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

// Bench runs every metric against the reference and our server.
type Bench struct {
	cfg     Config
	scratch string
	ref     *Target
	ours    *Target
	base    *Target // -base: a second build of ours (fairness, teardown and floors groups)
	floors  *Floors
	servers []*Server  // every server started, stopped at the end
	mcp     *MCPResult // the mcp group's results (nil: not run)
}

// logf prints progress to stderr.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[bench %s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// machine describes this host.
func machine() Machine {
	return Machine{
		CPUs:    runtime.NumCPU(),
		Kernel:  readTrim("/proc/sys/kernel/osrelease"),
		LoadAvg: strings.Join(strings.Fields(readTrim("/proc/loadavg"))[:3], " "),
		Go:      runtime.Version(),
	}
}

// startTarget starts a server and connects its main client.
// viol may be shared with another target (nil: a new one).
func (b *Bench) startTarget(ctx context.Context, role, server, bin string, extra []string, viol *Violations) (*Target, error) {
	srv, err := StartServer(ctx, role, bin, extra, b.scratch)
	if err != nil {
		return nil, err
	}
	b.servers = append(b.servers, srv)
	if viol == nil {
		viol = &Violations{}
	}
	t := &Target{
		Role:     role,
		Srv:      srv,
		viol:     viol,
		quickAck: b.cfg.QuickAck,
		Res:      &ServerResult{Server: server, Binary: bin, URL: srv.URL},
	}
	if _, err := t.client(ctx); err != nil {
		_ = srv.Stop()
		return nil, fmt.Errorf("%s: %w", role, err)
	}
	logf("%s server pid %d at %s", role, srv.Pid, srv.URL)
	return t, nil
}

// stopTarget closes a target's connection and stops its server.
func (b *Bench) stopTarget(t *Target) {
	if t == nil {
		return
	}
	t.close()
	if err := t.Srv.Stop(); err != nil {
		t.Res.Checks.StopStatus = err.Error()
	} else {
		t.Res.Checks.StopStatus = "exit 0 after SIGTERM"
	}
}

// stopAll stops every server still running (used on early exits).
func (b *Bench) stopAll() {
	for _, s := range b.servers {
		_ = s.Stop()
	}
}

// wants reports whether metric group g was selected with -only.
func (b *Bench) wants(g string) bool {
	if b.cfg.Only == "" {
		return true
	}
	for _, x := range strings.Split(b.cfg.Only, ",") {
		if strings.TrimSpace(x) == g {
			return true
		}
	}
	return false
}

// execute runs the selected metric groups in a fixed order: memory first,
// on servers that have done little else yet; slow consumer last.
func (b *Bench) execute(ctx context.Context) {
	steps := []struct {
		group string
		run   func(context.Context)
	}{
		{"memory", b.runMemory},
		{"latency", b.runLatency},
		{"sandbox", b.runSandbox},
		{"execrun", b.runExecRun},
		{"cmdexec", b.runCmdExec},
		{"http", b.runHTTP},
		{"throughput", b.runThroughput},
		{"clientthroughput", b.runClientThroughput},
		{"concurrency", b.runConcurrency},
		{"tail", b.runTail},
		{"slow", b.runSlow},
		{"robust", b.runRobust},
		{"walk", b.runWalk},
		{"handles", b.runHandles},
		{"proxy", b.runProxy},
		{"mcp", b.runMCP},
		{"fairness", b.runFairness},
		{"teardown", b.runTeardown},
		{"ptypaired", b.runPTYPaired},
		{"floors", b.runFloors},
		{"scale", b.runScale},
	}
	for _, s := range steps {
		if ctx.Err() != nil {
			return
		}
		if b.wants(s.group) {
			t0 := time.Now()
			s.run(ctx)
			logf("%s done in %.1f s", s.group, time.Since(t0).Seconds())
		}
	}
}

func (b *Bench) targets() []*Target { return []*Target{b.ref, b.ours} }

// runMemory is #7. Each mode is measured on a fresh server per side (a
// second measurement on the same server would reuse memory its allocator
// kept from the first), after five warm-up starts in that mode.
func (b *Bench) runMemory(ctx context.Context) {
	for _, tty := range []bool{false, true} {
		for _, t := range b.targets() {
			if ctx.Err() != nil {
				return
			}
			name := "memory_idle_pipe"
			if tty {
				name = "memory_idle_pty"
			}
			m, err := b.memoryFresh(ctx, t, tty)
			if err != nil {
				m.Error = err.Error()
				t.setError(name, err)
			}
			if tty {
				t.Res.Metrics.MemoryPTY = m
			} else {
				t.Res.Metrics.MemoryPipe = m
			}
		}
	}
}

// memoryFresh starts a fresh server like t's, warms it up and runs
// memoryRun on it; anomalies count for t.
func (b *Bench) memoryFresh(ctx context.Context, t *Target, tty bool) (*Memory, error) {
	fresh, err := b.startTarget(ctx, t.Role+"-mem", t.Res.Server, t.Res.Binary, nil, t.viol)
	if err != nil {
		return &Memory{K: b.cfg.MemK, TTY: tty}, err
	}
	defer func() {
		b.stopTarget(fresh)
		mergeChecks(t, fresh)
	}()
	for range 5 {
		if _, err := spawnSampler(fresh, tty)(ctx); err != nil {
			return &Memory{K: b.cfg.MemK, TTY: tty}, fmt.Errorf("warm-up: %w", err)
		}
	}
	logf("memory: %s tty=%v K=%d (fresh server pid %d)", t.Role, tty, b.cfg.MemK, fresh.Srv.Pid)
	return memoryRun(ctx, fresh, tty, b.cfg.MemK)
}

// mergeChecks adds the exit-code findings and errors of a helper server
// (fresh memory servers, --concurrent-requests 32) to t.
func mergeChecks(t, from *Target) {
	t.mu.Lock()
	t.Res.Checks.ExitCodeErrors += from.Res.Checks.ExitCodeErrors
	for _, n := range from.Res.Checks.ExitCodeNotes {
		if len(t.Res.Checks.ExitCodeNotes) < 10 {
			t.Res.Checks.ExitCodeNotes = append(t.Res.Checks.ExitCodeNotes, n)
		}
	}
	t.mu.Unlock()
	for k, v := range from.Res.Errors {
		t.setError(from.Role+"_"+k, fmt.Errorf("%s", v))
	}
	if from.Res.Checks.StopStatus != "exit 0 after SIGTERM" {
		t.setError(from.Role+"_stop", fmt.Errorf("%s", from.Res.Checks.StopStatus))
	}
}

// runLatency is #1, #2, #3 and #10, interleaved with their floors.
func (b *Bench) runLatency(ctx context.Context) {
	c := b.cfg
	for _, tty := range []bool{false, true} {
		floor := floorSpawn
		if tty {
			floor = floorPTYSpawn
		}
		logf("latency: spawn/completion tty=%v (N=%d, %d rounds)", tty, c.N, c.Rounds)
		s := interleave(ctx, []subject{
			{"ref", spawnSampler(b.ref, tty)},
			{"ours", spawnSampler(b.ours, tty)},
			{"floor", floor},
		}, 2, c.Warm, c.N, c.Rounds)
		recordErrors("spawn_latency", tty, b.targets(), s)
		for i, t := range b.targets() {
			if tty {
				t.Res.Metrics.SpawnPTY, t.Res.Metrics.CompletionPTY = s[i].latency(0), s[i].latency(1)
			} else {
				t.Res.Metrics.SpawnPipe, t.Res.Metrics.CompletionPipe = s[i].latency(0), s[i].latency(1)
			}
		}
		if tty {
			b.floors.PTYSpawn = s[2].latency(0)
		} else {
			b.floors.Spawn = s[2].latency(0)
		}
	}
	logf("latency: first byte of echo hi")
	s := interleave(ctx, []subject{
		{"ref", firstByteSampler(b.ref)},
		{"ours", firstByteSampler(b.ours)},
		{"floor", floorFirstByte},
	}, 1, c.Warm, c.N, c.Rounds)
	recordErrors("first_byte_latency", false, b.targets(), s)
	b.ref.Res.Metrics.FirstByte, b.ours.Res.Metrics.FirstByte = s[0].latency(0), s[1].latency(0)
	b.floors.FirstByte = s[2].latency(0)
	logf("latency: fs/getMetadata")
	s = interleave(ctx, []subject{
		{"ref", metadataSampler(b.ref)},
		{"ours", metadataSampler(b.ours)},
	}, 1, c.Warm, c.N, c.Rounds)
	recordErrors("metadata_rtt", false, b.targets(), s)
	b.ref.Res.Metrics.Metadata, b.ours.Res.Metrics.Metadata = s[0].latency(0), s[1].latency(0)
}

// recordErrors notes sample errors of an interleaved metric in the
// targets' error lists.
func recordErrors(metric string, tty bool, ts []*Target, s []*series) {
	if tty {
		metric += "_pty"
	}
	for i, t := range ts {
		if s[i].errs > 0 && s[i].lastErr != nil {
			t.setError(metric, fmt.Errorf("%d failed samples, last: %w", s[i].errs, s[i].lastErr))
		}
	}
}

// runThroughput is #4 and #5, interleaved with the Go read floors.
func (b *Bench) runThroughput(ctx context.Context) {
	for _, tty := range []bool{false, true} {
		size, rounds := b.cfg.PipeSize, b.cfg.PipeRounds
		if tty {
			size, rounds = b.cfg.PTYSize, b.cfg.PTYRounds
		}
		cmd := fmt.Sprintf("sh -c 'head -c %d /dev/zero'", size)
		res := map[*Target]*Throughput{}
		fails := map[*Target]int{}
		for _, t := range b.targets() {
			res[t] = &Throughput{Command: cmd, Size: size}
		}
		floor := &Throughput{Command: fmt.Sprintf("head -c %d /dev/zero, 64 KiB reads", size), Size: size}
		spin := &Throughput{Command: fmt.Sprintf("head -c %d /dev/zero, 64 KiB non-blocking reads, busy polling", size), Size: size}
		nsub := 3 // ref, ours, floor (+ the spinning PTY floor)
		if tty {
			nsub = 4
		}
		logf("throughput: tty=%v %d MiB × %d rounds", tty, size>>20, rounds)
		for r := range rounds {
			for _, i := range order(nsub, r) {
				if ctx.Err() != nil {
					break
				}
				if i >= 2 {
					run := floorThroughput(ctx, i == 3, tty, size)
					if i == 3 {
						spin.add(run)
					} else {
						floor.add(run)
					}
					continue
				}
				t := b.targets()[i]
				if fails[t] >= 2 {
					continue
				}
				if !throughputSample(ctx, t, tty, size, res[t]) {
					fails[t]++
				}
			}
		}
		for _, t := range b.targets() {
			if tty {
				t.Res.Metrics.PTYThroughput = res[t]
			} else {
				t.Res.Metrics.PipeThroughput = res[t]
			}
		}
		if tty {
			b.floors.PTYRead, b.floors.PTYReadSpin = floor, spin
		} else {
			b.floors.PipeRead = floor
		}
	}
}

// floorThroughput runs one Go read floor of size bytes: the busy-polling
// PTY floor with spin, else the PTY or the pipe floor. An error is kept in
// the run's FirstError.
func floorThroughput(ctx context.Context, spin, tty bool, size int64) ThroughputRun {
	var run ThroughputRun
	var err error
	switch {
	case spin:
		run, err = floorPTYReadSpin(ctx, size)
	case tty:
		run, err = floorPTYRead(ctx, size)
	default:
		run, err = floorPipeRead(ctx, size)
	}
	if err != nil {
		run.FirstError = err.Error()
	}
	return run
}

// throughputSample adds one throughput run of t to res, recording errors on
// t, and on the first pipe run reads back what the server retained. It
// returns false if the run could not be made.
func throughputSample(ctx context.Context, t *Target, tty bool, size int64, res *Throughput) bool {
	run, p, err := throughputRun(ctx, t, tty, size)
	if err != nil {
		run.FirstError = err.Error()
		res.Error = err.Error()
		t.setError(map[bool]string{false: "pipe_throughput", true: "pty_throughput"}[tty], err)
	} else if run.FirstError != "" {
		t.setError(map[bool]string{false: "pipe_throughput", true: "pty_throughput"}[tty], fmt.Errorf("%s", run.FirstError))
	}
	res.add(run)
	if !tty && p != nil && t.Res.Checks.RetainedBytes == nil {
		if n, err := retainedBytes(ctx, t, p); err == nil {
			t.Res.Checks.RetainedBytes = &n
		} else {
			t.setError("retained_bytes", err)
		}
	}
	return err == nil
}

// runConcurrency is #6: K starts on one connection and K connections, with
// the reference also run with --concurrent-requests 32, and the goroutine
// floor.
func (b *Bench) runConcurrency(ctx context.Context) {
	var cr32 *Target
	if b.cfg.CR32 {
		var err error
		cr32, err = b.startTarget(ctx, "ref-cr32", "reference --concurrent-requests 32", b.cfg.Ref, []string{"--concurrent-requests", "32"}, b.ref.viol)
		if err != nil {
			b.ref.setError("concurrency_cr32", err)
			cr32 = nil
		}
	}
	defer func() {
		if cr32 != nil {
			b.stopTarget(cr32)
			mergeChecks(b.ref, cr32)
		}
	}()
	type job struct {
		t    *Target // nil: floor
		mode string
		res  *Concurrency
	}
	b.floors.Concurrency = map[string]*Durations{}
	for _, k := range b.cfg.ConcKs {
		var jobs []job
		for _, t := range b.targets() {
			jobs = append(jobs, job{t, "one_connection", &Concurrency{K: k, Mode: "one_connection"}})
		}
		if cr32 != nil {
			jobs = append(jobs, job{cr32, "one_connection_cr32", &Concurrency{K: k, Mode: "one_connection_cr32"}})
		}
		for _, t := range b.targets() {
			jobs = append(jobs, job{t, "k_connections", &Concurrency{K: k, Mode: "k_connections"}})
		}
		jobs = append(jobs, job{nil, "floor", &Concurrency{K: k, Mode: "goroutines"}})
		logf("concurrency: K=%d, %d rounds", k, b.cfg.ConcRounds)
		for r := range b.cfg.ConcRounds {
			for _, i := range order(len(jobs), r) {
				if ctx.Err() != nil {
					break
				}
				j := jobs[i]
				if j.res.Errors >= 2 {
					continue
				}
				var d time.Duration
				var err error
				switch {
				case j.t == nil:
					d, err = floorConcurrency(ctx, k)
				case j.mode == "k_connections":
					d, err = concurrencyKConns(ctx, j.t, k)
				default:
					d, err = concurrencyOneConn(ctx, j.t, k)
				}
				if err != nil {
					j.res.Errors++
					j.res.Error = err.Error()
					if j.t != nil {
						j.t.setError(fmt.Sprintf("concurrency_%s_%d", j.mode, k), err)
					}
					continue
				}
				j.res.add(d)
			}
		}
		for _, j := range jobs {
			switch {
			case j.t == nil:
				b.floors.Concurrency[fmt.Sprint(k)] = &j.res.Durations
			case j.t == cr32:
				b.ref.Res.Metrics.Concurrency = append(b.ref.Res.Metrics.Concurrency, j.res)
			default:
				j.t.Res.Metrics.Concurrency = append(j.t.Res.Metrics.Concurrency, j.res)
			}
		}
	}
	b.floors.ConcurrencyKs = b.cfg.ConcKs
}

// runTail is #9.
func (b *Bench) runTail(ctx context.Context) {
	for _, tty := range []bool{true, false} {
		for _, t := range b.targets() {
			runs := b.cfg.TailOurs
			if t == b.ref {
				runs = b.cfg.TailRef
			}
			logf("tail completeness: %s tty=%v, %d runs", t.Role, tty, runs)
			tl := tailRun(ctx, t, tty, runs)
			if tl.Error != "" {
				t.setError(map[bool]string{false: "tail_pipe", true: "tail_pty"}[tty], fmt.Errorf("%d errors, last: %s", tl.Errors, tl.Error))
			}
			if tty {
				t.Res.Metrics.TailPTY = tl
			} else {
				t.Res.Metrics.TailPipe = tl
			}
		}
	}
}

// runSlow is #8.
func (b *Bench) runSlow(ctx context.Context) {
	for _, t := range b.targets() {
		logf("slow consumer: %s, stall %v", t.Role, b.cfg.Stall)
		sc, err := slowConsumerRun(ctx, t, b.cfg.Stall)
		if err != nil {
			sc.Error = err.Error()
			t.setError("slow_consumer", err)
		}
		t.Res.Metrics.SlowConsumer = sc
	}
}

// finishChecks copies the client-side violation counters into the results.
func finishChecks(t *Target) {
	c := &t.Res.Checks
	c.OutputAfterClosed = t.viol.OutputAfterClosed.Load()
	c.SeqDisorder = t.viol.SeqDisorder.Load()
	c.ExitedAfterClosed = t.viol.ExitedAfterClosed.Load()
	c.MissingExited = t.viol.MissingExited.Load()
	c.Stray = t.viol.Stray.Load()
	t.viol.mu.Lock()
	c.Notes = append([]string(nil), t.viol.Notes...)
	t.viol.mu.Unlock()
}
