package main

import (
	"bufio"
	"context"
	"fmt"
	"github.com/codexec/codex/wire"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The robustness rows (docs/benchmarking.md §6): the memory
// a server spends on a stalled client with many writers, on one large
// fs/readFile, and on many connect → start → drop cycles.

// StallMany is the stalled-client row: K processes each write Size bytes
// while the client reads nothing for Stall.
type StallMany struct {
	K            int     `json:"k"`
	SizeMiB      int64   `json:"size_per_process_mib"`
	StallSeconds float64 `json:"stall_s"`
	BaseRSSKiB   int64   `json:"base_rss_kib"`
	MaxGrowthKiB int64   `json:"max_rss_growth_kib"`
	// MaxDrainGrowthKiB is the growth while the client reads again and
	// every writer runs.
	MaxDrainGrowthKiB int64  `json:"max_rss_growth_drain_kib"`
	Bytes             int64  `json:"bytes"`
	Expected          int64  `json:"expected_bytes"`
	Pass              bool   `json:"pass"` // growth ≤ 64 MiB and every byte arrived
	Error             string `json:"error,omitempty"`
}

// ReadFileMem is the large fs/readFile row: the server's peak RSS (VmHWM,
// reset before the call) above its RSS before the call.
type ReadFileMem struct {
	SizeMiB      int64   `json:"file_mib"`
	Sandboxed    bool    `json:"sandboxed"` // through the sandboxed fs helper
	BaseRSSKiB   int64   `json:"base_rss_kib"`
	PeakGrowthKB int64   `json:"peak_rss_growth_kib"`
	Ratio        float64 `json:"growth_over_file_size"`
	Pass         bool    `json:"pass"` // ratio ≤ 2 and the content came back whole
	Error        string  `json:"error,omitempty"`
}

// Cycles is the connect → start → drop row (ours only, --session-ttl 0).
type Cycles struct {
	N             int    `json:"cycles"`
	RSSBeforeKiB  int64  `json:"rss_before_kib"`
	RSSAfterKiB   int64  `json:"rss_after_kib"`
	HeapBeforeKiB int64  `json:"heap_inuse_before_kib"` // after a forced GC
	HeapAfterKiB  int64  `json:"heap_inuse_after_kib"`  // after a forced GC
	FDsBefore     int    `json:"fds_before"`
	FDsAfter      int    `json:"fds_after"`
	ThreadsBefore int    `json:"threads_before"`
	ThreadsAfter  int    `json:"threads_after"`
	GoroutinesBef int    `json:"goroutines_before"`
	GoroutinesAft int    `json:"goroutines_after"`
	Pass          bool   `json:"pass"` // heap back within 4 MiB, fds flat
	Error         string `json:"error,omitempty"`
}

// runRobust runs the three rows.
func (b *Bench) runRobust(ctx context.Context) {
	k, size, stall := 50, int64(100<<20), 10*time.Second
	fileSize := int64(200 << 20)
	cycles := 1000
	if b.cfg.Quick {
		cycles = 300
	}
	for _, t := range b.targets() {
		logf("stalled client: %s, %d × %d MiB, stall %v", t.Role, k, size>>20, stall)
		sm, err := stallManyRun(ctx, t, k, size, stall)
		if err != nil {
			sm.Error = err.Error()
			t.setError("stall_many", err)
		}
		t.Res.Metrics.StallMany = sm
	}
	home, _ := os.UserHomeDir()
	for _, t := range b.targets() {
		logf("fs/readFile memory: %s, %d MiB", t.Role, fileSize>>20)
		rf, err := readFileMemRun(ctx, t, b.scratch, fileSize, nil)
		if err != nil {
			rf.Error = err.Error()
			t.setError("readfile_memory", err)
		}
		t.Res.Metrics.ReadFileMem = rf
		ws := filepath.Join(b.scratch, t.Role+"-readfile-ws")
		if err := os.MkdirAll(ws, 0o755); err != nil {
			t.setError("readfile_memory_sandboxed", err)
			continue
		}
		logf("fs/readFile memory, sandboxed: %s, %d MiB", t.Role, fileSize>>20)
		rf, err = readFileMemRun(ctx, t, ws, fileSize, workspaceSandbox(ws, home, true))
		if err != nil {
			rf.Error = err.Error()
			t.setError("readfile_memory_sandboxed", err)
		}
		t.Res.Metrics.ReadFileMemSandboxed = rf
	}
	logf("connect/start/drop cycles: ours, %d", cycles)
	cy, err := b.cyclesRun(ctx, cycles)
	if err != nil {
		cy.Error = err.Error()
		b.ours.setError("cycles", err)
	}
	b.ours.Res.Metrics.Cycles = cy
}

// stallManyRun starts k × `head -c size /dev/zero` on a fresh connection,
// reads nothing for stall while sampling the server's RSS every 0.5 s, then
// resumes and checks that every byte arrives.
func stallManyRun(ctx context.Context, t *Target, k int, size int64, stall time.Duration) (*StallMany, error) {
	sm := &StallMany{K: k, SizeMiB: size >> 20, StallSeconds: stall.Seconds(), Expected: int64(k) * size}
	c, err := t.dial(ctx)
	if err != nil {
		return sm, err
	}
	defer c.Close()
	base, err := readProcStatus(t.Srv.Pid)
	if err != nil {
		return sm, err
	}
	sm.BaseRSSKiB = base.RSSKiB
	procs := make([]*Proc, 0, k)
	var chans []<-chan *Response
	for range k {
		p, ch, err := c.StartAsync(ctx, StartParams{Argv: []string{"head", "-c", fmt.Sprint(size), "/dev/zero"}, Cwd: "file:///tmp", Env: benchEnv}, false)
		if err != nil {
			return sm, err
		}
		procs, chans = append(procs, p), append(chans, ch)
	}
	for _, ch := range chans {
		if r, err := c.Await(ctx, ch); err != nil || r.Err != nil {
			return sm, fmt.Errorf("process/start: %v %v", err, r)
		}
	}
	c.Pause()
	t0 := time.Now()
	for i := 1; time.Duration(i)*500*time.Millisecond <= stall; i++ {
		select {
		case <-ctx.Done():
			c.Resume()
			return sm, ctx.Err()
		case <-time.After(time.Until(t0.Add(time.Duration(i) * 500 * time.Millisecond))):
		}
		if st, err := readProcStatus(t.Srv.Pid); err == nil {
			sm.MaxGrowthKiB = max(sm.MaxGrowthKiB, st.RSSKiB-base.RSSKiB)
		}
	}
	c.Resume()
	// Sample the drain too: every writer runs at once then.
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for _, p := range procs {
			<-p.Closed()
		}
	}()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for waiting := true; waiting; {
		select {
		case <-drained:
			waiting = false
		case <-ctx.Done():
			return sm, ctx.Err()
		case <-time.After(300 * time.Second):
			return sm, fmt.Errorf("output not drained after 300 s")
		case <-tick.C:
			if st, err := readProcStatus(t.Srv.Pid); err == nil {
				sm.MaxDrainGrowthKiB = max(sm.MaxDrainGrowthKiB, st.RSSKiB-base.RSSKiB)
			}
		}
	}
	for _, p := range procs {
		sm.Bytes += p.Bytes
	}
	sm.Pass = sm.MaxGrowthKiB <= 64<<10 && sm.Bytes == sm.Expected
	return sm, nil
}

// readFileMemRun writes a file of size bytes under dir, resets the server's
// peak RSS (clear_refs 5), reads the file with fs/readFile and reports the
// peak growth.
func readFileMemRun(ctx context.Context, t *Target, dir string, size int64, sb *SandboxObject) (*ReadFileMem, error) {
	rf := &ReadFileMem{SizeMiB: size >> 20, Sandboxed: sb != nil}
	path := filepath.Join(dir, "readfile.bin")
	if err := writePattern(path, size); err != nil {
		return rf, err
	}
	defer os.Remove(path)
	c, err := t.dial(ctx)
	if err != nil {
		return rf, err
	}
	defer c.Close()
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", t.Srv.Pid), []byte("5"), 0); err != nil {
		return rf, fmt.Errorf("resetting the peak RSS: %w", err)
	}
	base, err := readProcStatus(t.Srv.Pid)
	if err != nil {
		return rf, err
	}
	rf.BaseRSSKiB = base.RSSKiB
	cctx, cancel := context.WithTimeout(ctx, 120*time.Second)
	defer cancel()
	params := map[string]any{"path": "file://" + path}
	if sb != nil {
		params["sandbox"] = sb
	}
	r, err := c.Call(cctx, wire.MethodFSReadFile, params)
	if err != nil {
		return rf, err
	}
	hwm, err := readHWM(t.Srv.Pid)
	if err != nil {
		return rf, err
	}
	rf.PeakGrowthKB = hwm - base.RSSKiB
	rf.Ratio = round3(float64(rf.PeakGrowthKB<<10) / float64(size))
	got := base64Len(stringAfter(r.Result, []byte(`"dataBase64":"`)))
	if got != size {
		return rf, fmt.Errorf("fs/readFile returned %d bytes, want %d", got, size)
	}
	rf.Pass = rf.Ratio <= 2
	return rf, nil
}

// writePattern writes size bytes of a non-constant pattern to path.
func writePattern(path string, size int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	block := make([]byte, 1<<20)
	for i := range block {
		block[i] = byte(i*7 + i>>8)
	}
	for n := int64(0); n < size; n += int64(len(block)) {
		if _, err := w.Write(block[:min(int64(len(block)), size-n)]); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// readHWM reads VmHWM (KiB) from /proc/<pid>/status.
func readHWM(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				return strconv.ParseInt(f[0], 10, 64)
			}
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}

// cyclesRun starts a second server of ours with --session-ttl 0 and the
// hidden --debug-pprof listener, runs n × (connect, start `sleep 30`, drop
// the connection), and compares RSS, fds, threads, goroutines and the heap
// in use after a forced GC, before and after.
func (b *Bench) cyclesRun(ctx context.Context, n int) (*Cycles, error) {
	cy := &Cycles{N: n}
	pprofAddr := "127.0.0.1:" + strconv.Itoa(freePort())
	srv, err := StartServer(ctx, "ours-cycles", b.cfg.Ours, []string{"--session-ttl", "0", "--debug-pprof", pprofAddr}, b.scratch)
	if err != nil {
		return cy, err
	}
	b.servers = append(b.servers, srv)
	defer srv.Stop()
	t := &Target{Role: "ours-cycles", Srv: srv, viol: &Violations{}, quickAck: b.cfg.QuickAck, Res: &ServerResult{}}
	// Warm up the server once so that lazily built state is not counted.
	cycle := func() error {
		c, err := t.dial(ctx)
		if err != nil {
			return err
		}
		defer c.Close()
		_, _, err = c.Start(ctx, []string{"sleep", "30"}, false, false)
		return err
	}
	for range 20 {
		if err := cycle(); err != nil {
			return cy, err
		}
	}
	time.Sleep(500 * time.Millisecond)
	before, err := readProcStatus(srv.Pid)
	if err != nil {
		return cy, err
	}
	cy.RSSBeforeKiB, cy.FDsBefore, cy.ThreadsBefore = before.RSSKiB, before.FDs, before.Threads
	if cy.HeapBeforeKiB, cy.GoroutinesBef, err = heapInuse(ctx, pprofAddr); err != nil {
		return cy, err
	}
	for range n {
		if err := cycle(); err != nil {
			return cy, err
		}
	}
	// The sessions' processes are killed asynchronously; give them a moment.
	time.Sleep(2 * time.Second)
	after, err := readProcStatus(srv.Pid)
	if err != nil {
		return cy, err
	}
	cy.RSSAfterKiB, cy.FDsAfter, cy.ThreadsAfter = after.RSSKiB, after.FDs, after.Threads
	if cy.HeapAfterKiB, cy.GoroutinesAft, err = heapInuse(ctx, pprofAddr); err != nil {
		return cy, err
	}
	cy.Pass = cy.HeapAfterKiB-cy.HeapBeforeKiB <= 4<<10 && cy.FDsAfter <= cy.FDsBefore+2
	return cy, nil
}

// heapInuse forces a GC through the server's pprof heap endpoint and reads
// HeapInuse from its MemStats trailer, and the goroutine count.
func heapInuse(ctx context.Context, addr string) (kib int64, goroutines int, err error) {
	get := func(path string) (string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
		if err != nil {
			return "", err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	heap, err := get("/debug/pprof/heap?gc=1&debug=1")
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(heap, "\n") {
		if v, ok := strings.CutPrefix(line, "# HeapInuse = "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			kib = n >> 10
		}
	}
	gr, err := get("/debug/pprof/goroutine?debug=1")
	if err != nil {
		return 0, 0, err
	}
	if first, _, ok := strings.Cut(gr, "\n"); ok {
		if _, v, ok := strings.Cut(first, "total "); ok {
			goroutines, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return kib, goroutines, nil
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// robustRows are the report rows of the robustness metrics.
func robustRows(o, r Metrics) []Row {
	stall := func(m *StallMany, drain bool) *float64 {
		if m == nil || m.Error != "" {
			return nil
		}
		if drain {
			return fp(float64(m.MaxDrainGrowthKiB))
		}
		return fp(float64(m.MaxGrowthKiB))
	}
	rf := func(m *ReadFileMem) *float64 {
		if m == nil || m.Error != "" {
			return nil
		}
		return fp(m.Ratio)
	}
	rows := []Row{
		newRow("R1 50 × 100 MiB, client stalled 10 s: max server RSS growth", "KiB", "lower", stall(o.StallMany, false), stall(r.StallMany, false), nil, nil, nil, nil),
		newRow("R1 the same while draining: max server RSS growth", "KiB", "lower", stall(o.StallMany, true), stall(r.StallMany, true), nil, nil, nil, nil),
		newRow("R2 fs/readFile 200 MiB: peak RSS growth / file size", "ratio", "lower", rf(o.ReadFileMem), rf(r.ReadFileMem), nil, nil, nil, nil),
		newRow("R2 the same, sandboxed (fs helper)", "ratio", "lower", rf(o.ReadFileMemSandboxed), rf(r.ReadFileMemSandboxed), nil, nil, nil, nil),
	}
	if c := o.Cycles; c != nil && c.Error == "" {
		rows = append(rows, newRow(fmt.Sprintf("R3 heap in use after %d connect/start/drop cycles − before (after GC)", c.N), "KiB", "lower", fp(float64(c.HeapAfterKiB-c.HeapBeforeKiB)), nil, nil, nil, nil, nil))
	}
	return rows
}

// robustTargets are the targets (docs/benchmarking.md §6) of the robustness metrics.
func robustTargets(o Metrics) []TargetCheck {
	sm := TargetCheck{Target: "stalled client, 50 × 100 MiB: server RSS growth ≤ 64 MiB, every byte delivered", Measured: "not measured"}
	if s := o.StallMany; s != nil {
		sm.Measured = fmt.Sprintf("growth %d KiB (draining %d KiB), %d of %d bytes", s.MaxGrowthKiB, s.MaxDrainGrowthKiB, s.Bytes, s.Expected)
		if s.Error != "" {
			sm.Measured += "; error: " + s.Error
		}
		sm.Pass = pass(s.Pass && s.Error == "")
	}
	rf := TargetCheck{Target: "fs/readFile 200 MiB: peak RSS growth ≤ 2× the file", Measured: "not measured"}
	if s := o.ReadFileMem; s != nil {
		rf.Measured = fmt.Sprintf("peak growth %d KiB = %.2f× the file", s.PeakGrowthKB, s.Ratio)
		if s.Error != "" {
			rf.Measured += "; error: " + s.Error
		}
		rf.Pass = pass(s.Pass && s.Error == "")
	}
	cy := TargetCheck{Target: "connect → start → drop cycles: heap back within 4 MiB after a GC, fds flat", Measured: "not measured"}
	if c := o.Cycles; c != nil {
		cy.Measured = fmt.Sprintf("%d cycles: heap %d → %d KiB, RSS %d → %d KiB, fds %d → %d, threads %d → %d, goroutines %d → %d",
			c.N, c.HeapBeforeKiB, c.HeapAfterKiB, c.RSSBeforeKiB, c.RSSAfterKiB, c.FDsBefore, c.FDsAfter, c.ThreadsBefore, c.ThreadsAfter, c.GoroutinesBef, c.GoroutinesAft)
		if c.Error != "" {
			cy.Measured += "; error: " + c.Error
		}
		cy.Pass = pass(c.Pass && c.Error == "")
	}
	return []TargetCheck{sm, rf, cy}
}
