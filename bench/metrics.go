package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/codexec/codex/wire"
	"sync"
	"time"
)

// ServerResult is everything measured for one server.
type ServerResult struct {
	Server  string            `json:"server"` // "ours" or "reference"
	Binary  string            `json:"binary"`
	Version string            `json:"version"`
	URL     string            `json:"url"`
	Machine Machine           `json:"machine"`
	Metrics Metrics           `json:"metrics"`
	Checks  Checks            `json:"checks"`
	Errors  map[string]string `json:"errors,omitempty"`
}

// Metrics are benchmarks.md §3 #1–#11.
type Metrics struct {
	SpawnPipe            *Latency       `json:"spawn_latency_pipe,omitempty"`      // #1 tty:false
	SpawnPTY             *Latency       `json:"spawn_latency_pty,omitempty"`       // #1 tty:true
	CompletionPipe       *Latency       `json:"completion_latency_pipe,omitempty"` // #2 tty:false
	CompletionPTY        *Latency       `json:"completion_latency_pty,omitempty"`  // #2 tty:true
	FirstByte            *Latency       `json:"first_byte_latency,omitempty"`      // #3
	PipeThroughput       *Throughput    `json:"pipe_throughput,omitempty"`         // #4
	PTYThroughput        *Throughput    `json:"pty_throughput,omitempty"`          // #5
	Concurrency          []*Concurrency `json:"concurrency,omitempty"`             // #6
	MemoryPipe           *Memory        `json:"memory_idle_pipe,omitempty"`        // #7 pipes
	MemoryPTY            *Memory        `json:"memory_idle_pty,omitempty"`         // #7 PTY
	SlowConsumer         *SlowConsumer  `json:"slow_consumer,omitempty"`           // #8
	TailPTY              *Tail          `json:"tail_completeness_pty,omitempty"`   // #9 tty:true
	TailPipe             *Tail          `json:"tail_completeness_pipe,omitempty"`  // #9 tty:false
	Metadata             *Latency       `json:"metadata_rtt,omitempty"`            // #10
	SandboxSpawn         *Latency       `json:"sandboxed_spawn_latency,omitempty"` // #11 workspace-write, tty:false
	SandboxClosed        *Latency       `json:"sandboxed_completion_latency,omitempty"`
	SandboxWrite         *Latency       `json:"sandboxed_fs_write_latency,omitempty"`
	ExecRun              *Latency       `json:"exec_run_true,omitempty"`             // `codex exec run -- /bin/true` wall time (ours only)
	ClientThroughput     *ClientRate    `json:"client_throughput,omitempty"`         // `codex exec run -- head -c 512M /dev/zero | wc -c` (ours only)
	StallMany            *StallMany     `json:"stall_many,omitempty"`                // robustness: 50 writers, stalled client
	ReadFileMem          *ReadFileMem   `json:"readfile_memory,omitempty"`           // robustness: 200 MiB fs/readFile
	ReadFileMemSandboxed *ReadFileMem   `json:"readfile_memory_sandboxed,omitempty"` // the same through the sandboxed fs helper
	Cycles               *Cycles        `json:"connect_cycles,omitempty"`            // robustness: connect → start → drop (ours only)
}

// Checks are the correctness observations made on every run (§3, end).
type Checks struct {
	ExitCodeErrors    int      `json:"exit_code_errors"`
	ExitCodeNotes     []string `json:"exit_code_notes,omitempty"`
	OutputAfterClosed int64    `json:"output_after_closed"`
	SeqDisorder       int64    `json:"seq_disorder"`
	ExitedAfterClosed int64    `json:"exited_after_closed"`
	MissingExited     int64    `json:"closed_without_exited"`
	Stray             int64    `json:"stray_notifications"`
	RetainedBytes     *int64   `json:"retained_bytes_after_large_run,omitempty"` // process/read after the first pipe throughput run
	Reconnects        int      `json:"reconnects,omitempty"`
	Notes             []string `json:"notes,omitempty"` // descriptions of the first anomalies
	StopStatus        string   `json:"stop_status"`     // how the server ended on SIGTERM
}

// ThroughputRun is one throughput measurement.
type ThroughputRun struct {
	MiBps      float64 `json:"mib_s"`
	Seconds    float64 `json:"seconds"`
	Bytes      int64   `json:"bytes"`
	Chunks     int     `json:"chunks,omitempty"`
	AvgChunk   float64 `json:"avg_chunk_bytes,omitempty"`
	OK         bool    `json:"ok"`
	FirstError string  `json:"error,omitempty"`
}

func newRun(bytes int64, d time.Duration, chunks int, ok bool) ThroughputRun {
	r := ThroughputRun{Seconds: round3(d.Seconds()), Bytes: bytes, Chunks: chunks, OK: ok}
	if d > 0 {
		r.MiBps = round3(float64(bytes) / (1 << 20) / d.Seconds())
	}
	if chunks > 0 {
		r.AvgChunk = round3(float64(bytes) / float64(chunks))
	}
	return r
}

// Throughput summarises throughput runs (median of the runs).
type Throughput struct {
	Command string          `json:"command"`
	Size    int64           `json:"size_bytes"`
	MiBps   float64         `json:"median_mib_s"`
	Min     float64         `json:"min_mib_s"`
	Max     float64         `json:"max_mib_s"`
	Runs    []ThroughputRun `json:"runs"`
	Failed  int             `json:"failed_runs,omitempty"`
	Error   string          `json:"error,omitempty"`
}

func (t *Throughput) add(r ThroughputRun) {
	t.Runs = append(t.Runs, r)
	var v []float64
	for _, x := range t.Runs {
		if x.OK {
			v = append(v, x.MiBps)
		}
	}
	t.Failed = len(t.Runs) - len(v)
	if len(v) == 0 {
		return
	}
	t.MiBps = round3(median(v))
	t.Min, t.Max = v[0], v[0]
	for _, x := range v {
		t.Min = min(t.Min, x)
		t.Max = max(t.Max, x)
	}
}

// Durations summarises repeated wall-clock durations in seconds.
type Durations struct {
	Runs   []float64 `json:"runs_s"`
	Median float64   `json:"median_s"`
	Min    float64   `json:"min_s"`
	Max    float64   `json:"max_s"`
	Errors int       `json:"errors,omitempty"`
	Error  string    `json:"error,omitempty"`
}

func (d *Durations) add(v time.Duration) {
	d.Runs = append(d.Runs, round3(v.Seconds()))
	d.Median = round3(median(d.Runs))
	d.Min, d.Max = d.Runs[0], d.Runs[0]
	for _, x := range d.Runs {
		d.Min = min(d.Min, x)
		d.Max = max(d.Max, x)
	}
}

// Concurrency is #6 for one K and one mode.
type Concurrency struct {
	K    int    `json:"k"`
	Mode string `json:"mode"` // one_connection, k_connections, one_connection_cr32
	Durations
}

// Memory is #7 for one mode.
type Memory struct {
	K               int            `json:"k"`
	TTY             bool           `json:"tty"`
	Before          ProcStatus     `json:"before"`
	With            ProcStatus     `json:"with_children"`
	After           ProcStatus     `json:"after_terminate"`
	KiBPerChild     float64        `json:"kib_per_child"`
	FDsPerChild     float64        `json:"fds_per_child"`
	ThreadsPerChild float64        `json:"threads_per_child"`
	TerminatedOK    int            `json:"terminated_exit_137"`
	ExitCodes       map[string]int `json:"terminated_exit_codes"` // exit code → count after process/terminate
	Error           string         `json:"error,omitempty"`
}

// SlowSample is one sample taken while the client is not reading.
type SlowSample struct {
	T          float64 `json:"t_s"`
	RSSKiB     int64   `json:"server_rss_kib"`
	ChildState string  `json:"child_state"`
	ChildWchar int64   `json:"child_wchar"`
}

// SlowConsumer is #8.
type SlowConsumer struct {
	StallSeconds   float64      `json:"stall_s"`
	BaseRSSKiB     int64        `json:"base_rss_kib"`
	MaxGrowthKiB   int64        `json:"max_rss_growth_kib"`
	ChildPid       int          `json:"child_pid"`
	ChildBlocked   bool         `json:"child_blocked"`
	Samples        []SlowSample `json:"samples"`
	Bytes          int64        `json:"bytes"`
	Expected       int64        `json:"expected_bytes"`
	DrainSeconds   float64      `json:"drain_after_resume_s"`
	ExitCodeOK     bool         `json:"exit_code_ok"`
	Pass           bool         `json:"pass"`
	ChildNotFound  bool         `json:"child_not_found,omitempty"`
	SamplingErrors int          `json:"sampling_errors,omitempty"`
	Error          string       `json:"error,omitempty"`
}

// Tail is #9 for one mode.
type Tail struct {
	TTY        bool    `json:"tty"`
	Runs       int     `json:"runs"`
	Complete   int     `json:"complete"`
	Fraction   float64 `json:"fraction"`
	Incomplete []int64 `json:"incomplete_byte_counts,omitempty"`
	Errors     int     `json:"errors,omitempty"`
	Error      string  `json:"error,omitempty"`
}

// sampler produces one or more latency values per call.
type sampler func(ctx context.Context) ([]time.Duration, error)

// subject is one participant of an interleaved latency measurement.
type subject struct {
	name string
	run  sampler
}

// series collects an interleaved measurement's samples for one subject.
type series struct {
	vals    [][]float64   // [value][sample] ms
	rounds  [][][]float64 // [round][value][sample] ms
	errs    int
	lastErr error
	dead    bool
}

// latency builds the Latency of value k.
func (s *series) latency(k int) *Latency {
	l := summarize(s.vals[k])
	l.Errors = s.errs
	for _, r := range s.rounds {
		if len(r[k]) > 0 {
			l.Rounds = append(l.Rounds, round3(p50(r[k])))
		}
	}
	if s.dead && s.lastErr != nil {
		l.Error = s.lastErr.Error()
	}
	return l
}

// order returns subject indices rotated by round, so every subject takes
// each position in turn (ref, ours, floor / ours, floor, ref / …).
func order(n, round int) []int {
	out := make([]int, n)
	for i := range n {
		out[i] = (i + round) % n
	}
	return out
}

// interleave runs warm warm-ups per subject, then n measured samples each,
// split into rounds; in each round every subject runs its block in turn.
func interleave(ctx context.Context, subs []subject, nvals, warm, n, rounds int) []*series {
	out := make([]*series, len(subs))
	for i := range subs {
		out[i] = &series{vals: make([][]float64, nvals)}
	}
	maxErrs := max(5, n/4)
	for i, s := range subs {
		for range warm {
			if ctx.Err() != nil {
				return out
			}
			if _, err := s.run(ctx); err != nil {
				out[i].errs++
				out[i].lastErr = err
				if out[i].errs >= maxErrs || errors.Is(err, errFatal) {
					out[i].dead = true
					break
				}
			}
		}
		out[i].errs = 0
	}
	for r := range rounds {
		block := n / rounds
		if r < n%rounds {
			block++
		}
		for _, i := range order(len(subs), r) {
			s := out[i]
			rv := make([][]float64, nvals)
			for range block {
				if s.dead || ctx.Err() != nil {
					break
				}
				v, err := subs[i].run(ctx)
				if err != nil {
					s.errs++
					s.lastErr = err
					if s.errs >= maxErrs || errors.Is(err, errFatal) {
						s.dead = true
					}
					continue
				}
				for k := range min(nvals, len(v)) {
					rv[k] = append(rv[k], ms(v[k]))
					s.vals[k] = append(s.vals[k], ms(v[k]))
				}
			}
			s.rounds = append(s.rounds, rv)
		}
	}
	return out
}

// errFatal marks errors after which a subject is not retried (its
// connection or server is gone).
var errFatal = errors.New("fatal")

func fatal(err error) error { return fmt.Errorf("%w: %w", errFatal, err) }

// spawnSampler starts /bin/true and returns start→response and
// start→closed (metrics #1 and #2).
func spawnSampler(t *Target, tty bool) sampler {
	return func(ctx context.Context) ([]time.Duration, error) {
		c, err := t.client(ctx)
		if err != nil {
			return nil, fatal(err)
		}
		p, r, err := c.Start(ctx, []string{"/bin/true"}, tty, false)
		if err != nil {
			return nil, err
		}
		if err := p.Wait(ctx, 20*time.Second); err != nil {
			t.cleanup(c, p)
			return nil, err
		}
		t.checkExit(p, 0, "/bin/true")
		return []time.Duration{r.At.Sub(p.Start), p.ClosedAt.Sub(p.Start)}, nil
	}
}

// firstByteSampler starts `echo hi` and returns start→first output (#3).
func firstByteSampler(t *Target) sampler {
	return func(ctx context.Context) ([]time.Duration, error) {
		c, err := t.client(ctx)
		if err != nil {
			return nil, fatal(err)
		}
		p, _, err := c.Start(ctx, []string{"/bin/echo", "hi"}, false, false)
		if err != nil {
			return nil, err
		}
		if err := p.Wait(ctx, 20*time.Second); err != nil {
			t.cleanup(c, p)
			return nil, err
		}
		t.checkExit(p, 0, "echo hi")
		if p.FirstOutput.IsZero() || p.Bytes != 3 {
			return nil, fmt.Errorf("echo hi: got %d output bytes, want 3", p.Bytes)
		}
		return []time.Duration{p.FirstOutput.Sub(p.Start)}, nil
	}
}

// metadataSampler times fs/getMetadata of the cwd (#10).
func metadataSampler(t *Target) sampler {
	return func(ctx context.Context) ([]time.Duration, error) {
		c, err := t.client(ctx)
		if err != nil {
			return nil, fatal(err)
		}
		ch, sent, err := c.Send(ctx, wire.MethodFSGetMetadata, map[string]any{"path": "file:///tmp", "sandbox": nil})
		if err != nil {
			return nil, err
		}
		r, err := c.Await(ctx, ch)
		if err != nil {
			return nil, err
		}
		if r.Err != nil {
			return nil, r.Err
		}
		var md struct {
			IsDirectory bool `json:"isDirectory"`
		}
		if err := json.Unmarshal(r.Result, &md); err != nil || !md.IsDirectory {
			return nil, fmt.Errorf("fs/getMetadata /tmp: unexpected result %s", r.Result)
		}
		return []time.Duration{r.At.Sub(sent)}, nil
	}
}

// throughputRun runs `sh -c 'head -c SIZE /dev/zero'` and measures decoded
// bytes over start→closed (#4, #5).
func throughputRun(ctx context.Context, t *Target, tty bool, size int64) (ThroughputRun, *Proc, error) {
	c, err := t.client(ctx)
	if err != nil {
		return ThroughputRun{}, nil, err
	}
	argv := []string{"/bin/sh", "-c", fmt.Sprintf("head -c %d /dev/zero", size)}
	p, _, err := c.Start(ctx, argv, tty, false)
	if err != nil {
		return ThroughputRun{}, nil, err
	}
	timeout := 60*time.Second + time.Duration(size/(1<<20))*time.Second // ≥ 1 MiB/s
	if err := p.Wait(ctx, timeout); err != nil {
		t.cleanup(c, p)
		return ThroughputRun{}, nil, err
	}
	ok := t.checkExit(p, 0, "head -c")
	run := newRun(p.Bytes, p.ClosedAt.Sub(p.Start), p.Chunks, ok && p.Bytes == size)
	if p.Bytes != size {
		run.FirstError = fmt.Sprintf("received %d bytes, want %d", p.Bytes, size)
	}
	return run, p, nil
}

// retainedBytes reads back what the server retained of p (process/read from
// the start) and returns the decoded size.
func retainedBytes(ctx context.Context, t *Target, p *Proc) (int64, error) {
	c, err := t.client(ctx)
	if err != nil {
		return 0, err
	}
	r, err := c.Call(ctx, wire.MethodProcessRead, map[string]any{"processId": p.ID, "afterSeq": 0, "maxBytes": nil, "waitMs": 0})
	if err != nil {
		return 0, err
	}
	var res struct {
		Chunks []struct {
			Chunk string `json:"chunk"`
		} `json:"chunks"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil {
		return 0, err
	}
	var n int64
	for _, ch := range res.Chunks {
		n += base64Len([]byte(ch.Chunk))
	}
	return n, nil
}

// concurrencyOneConn starts k `sleep 0.2` at once on the main connection and
// times until every one is closed (#6).
func concurrencyOneConn(ctx context.Context, t *Target, k int) (time.Duration, error) {
	c, err := t.client(ctx)
	if err != nil {
		return 0, err
	}
	return runConcurrent(ctx, t, func(int) *Client { return c }, k)
}

// concurrencyKConns opens k connections, then starts one `sleep 0.2` on each
// at once and times until every one is closed (#6).
func concurrencyKConns(ctx context.Context, t *Target, k int) (time.Duration, error) {
	clients := make([]*Client, k)
	var wg sync.WaitGroup
	errs := make([]error, k)
	for i := range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			clients[i], errs[i] = t.dial(ctx)
		}()
	}
	wg.Wait()
	defer func() {
		var cw sync.WaitGroup
		for _, c := range clients {
			if c != nil {
				cw.Add(1)
				go func() { defer cw.Done(); c.Close() }()
			}
		}
		cw.Wait()
	}()
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	return runConcurrent(ctx, t, func(i int) *Client { return clients[i] }, k)
}

// runConcurrent starts k `sleep 0.2` from k goroutines, process i on
// client(i), and returns the time from the first request to the last close.
func runConcurrent(ctx context.Context, t *Target, client func(int) *Client, k int) (time.Duration, error) {
	procs := make([]*Proc, k)
	errs := make([]error, k)
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := client(i)
			p, _, err := c.Start(ctx, []string{"/bin/sleep", "0.2"}, false, false)
			if err != nil {
				errs[i] = err
				return
			}
			procs[i] = p
			if err := p.Wait(ctx, 120*time.Second); err != nil {
				t.cleanup(c, p)
				errs[i] = err
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	var last time.Time
	for _, p := range procs {
		t.checkExit(p, 0, "sleep 0.2")
		if p.ClosedAt.After(last) {
			last = p.ClosedAt
		}
	}
	return last.Sub(t0), nil
}

// memoryRun measures the server's RSS, fds and threads with k idle
// `sleep 1000` children, then terminates them (#7).
func memoryRun(ctx context.Context, t *Target, tty bool, k int) (*Memory, error) {
	m := &Memory{K: k, TTY: tty, ExitCodes: map[string]int{}}
	c, err := t.client(ctx)
	if err != nil {
		return m, err
	}
	time.Sleep(300 * time.Millisecond)
	if m.Before, err = readProcStatus(t.Srv.Pid); err != nil {
		return m, err
	}
	var procs []*Proc
	defer func() { // make sure nothing is left running, even on errors
		for _, p := range procs {
			select {
			case <-p.Closed():
			default:
				t.cleanup(c, p)
			}
		}
	}()
	for range k {
		p, _, err := c.Start(ctx, []string{"/bin/sleep", "1000"}, tty, false)
		if err != nil {
			return m, err
		}
		procs = append(procs, p)
	}
	time.Sleep(time.Second)
	if m.With, err = readProcStatus(t.Srv.Pid); err != nil {
		return m, err
	}
	m.KiBPerChild = round3(float64(m.With.RSSKiB-m.Before.RSSKiB) / float64(k))
	m.FDsPerChild = round3(float64(m.With.FDs-m.Before.FDs) / float64(k))
	m.ThreadsPerChild = round3(float64(m.With.Threads-m.Before.Threads) / float64(k))
	for _, p := range procs {
		running, err := c.Terminate(ctx, p)
		if err != nil {
			return m, fmt.Errorf("process/terminate: %w", err)
		}
		if !running {
			return m, fmt.Errorf("process/terminate of an idle sleep returned running:false")
		}
	}
	for _, p := range procs {
		if err := p.Wait(ctx, 20*time.Second); err != nil {
			return m, err
		}
		code := "null"
		if p.ExitCode != nil {
			code = fmt.Sprint(*p.ExitCode)
		}
		m.ExitCodes[code]++
		if t.checkExit(p, 137, "terminated sleep 1000") {
			m.TerminatedOK++
		}
	}
	time.Sleep(500 * time.Millisecond)
	m.After, err = readProcStatus(t.Srv.Pid)
	return m, err
}

// slowConsumerRun starts `head -c 1G /dev/zero`, stops reading for stall
// while sampling the server's RSS and the child's state, then resumes and
// checks that exactly 1 GiB arrives (#8).
func slowConsumerRun(ctx context.Context, t *Target, stall time.Duration) (*SlowConsumer, error) {
	const size = 1 << 30
	sc := &SlowConsumer{StallSeconds: stall.Seconds(), Expected: size}
	c, err := t.client(ctx)
	if err != nil {
		return sc, err
	}
	base, err := readProcStatus(t.Srv.Pid)
	if err != nil {
		return sc, err
	}
	sc.BaseRSSKiB = base.RSSKiB
	p, _, err := c.Start(ctx, []string{"head", "-c", fmt.Sprint(size), "/dev/zero"}, false, false)
	if err != nil {
		return sc, err
	}
	c.Pause()
	resumed := false
	defer func() {
		if !resumed {
			c.Resume()
			t.cleanup(c, p)
		}
	}()
	// find the child among the server's descendants
	deadline := time.Now().Add(3 * time.Second)
	for sc.ChildPid == 0 && time.Now().Before(deadline) {
		for _, d := range descendants(t.Srv.Pid) {
			if d.Comm == "head" {
				sc.ChildPid = d.Pid
			}
		}
		if sc.ChildPid == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	sc.ChildNotFound = sc.ChildPid == 0
	t0 := time.Now()
	for i := 1; time.Duration(i)*500*time.Millisecond <= stall; i++ {
		select {
		case <-ctx.Done():
			return sc, ctx.Err()
		case <-time.After(time.Until(t0.Add(time.Duration(i) * 500 * time.Millisecond))):
		}
		s := SlowSample{T: round3(time.Since(t0).Seconds())}
		if st, err := readProcStatus(t.Srv.Pid); err == nil {
			s.RSSKiB = st.RSSKiB
			sc.MaxGrowthKiB = max(sc.MaxGrowthKiB, st.RSSKiB-base.RSSKiB)
		} else {
			sc.SamplingErrors++
		}
		if sc.ChildPid != 0 {
			if ps, err := readProcStat(sc.ChildPid); err == nil && ps.Comm == "head" {
				s.ChildState = string(ps.State)
			} else {
				s.ChildState = "gone"
			}
			s.ChildWchar, _ = procWchar(sc.ChildPid)
		}
		sc.Samples = append(sc.Samples, s)
	}
	resumeAt := time.Now()
	c.Resume()
	resumed = true
	if err := p.Wait(ctx, 300*time.Second); err != nil {
		t.cleanup(c, p)
		return sc, err
	}
	sc.DrainSeconds = round3(p.ClosedAt.Sub(resumeAt).Seconds())
	sc.Bytes = p.Bytes
	sc.ExitCodeOK = t.checkExit(p, 0, "head -c 1G")
	// Blocked: the last half of the samples show state S and no progress.
	half := sc.Samples[len(sc.Samples)/2:]
	sc.ChildBlocked = len(half) >= 2
	for _, s := range half {
		if s.ChildState != "S" || s.ChildWchar != half[0].ChildWchar {
			sc.ChildBlocked = false
		}
	}
	sc.Pass = sc.ChildBlocked && sc.MaxGrowthKiB <= 8<<10 && sc.Bytes == size && sc.ExitCodeOK
	return sc, nil
}

// tailRun runs `head -c 1048576 /dev/zero` runs times and counts runs whose
// decoded output is exactly 1 MiB of zeros before process/closed (#9).
func tailRun(ctx context.Context, t *Target, tty bool, runs int) *Tail {
	const size = 1 << 20
	tl := &Tail{TTY: tty}
	for range runs {
		if ctx.Err() != nil {
			break
		}
		c, err := t.client(ctx)
		if err != nil {
			tl.Error = err.Error()
			break
		}
		tl.Runs++
		p, _, err := c.Start(ctx, []string{"head", "-c", fmt.Sprint(size), "/dev/zero"}, tty, true)
		if err != nil {
			tl.Errors++
			tl.Error = err.Error()
			continue
		}
		if err := p.Wait(ctx, 60*time.Second); err != nil {
			t.cleanup(c, p)
			tl.Errors++
			tl.Error = err.Error()
			continue
		}
		exitOK := t.checkExit(p, 0, "head -c 1048576")
		if p.Bytes == size && !p.NonZero && exitOK {
			tl.Complete++
		} else {
			tl.Incomplete = append(tl.Incomplete, p.Bytes)
		}
	}
	if tl.Runs > 0 {
		tl.Fraction = round3(float64(tl.Complete) / float64(tl.Runs))
	}
	return tl
}
