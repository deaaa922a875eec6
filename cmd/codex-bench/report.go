package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// Report is the whole output of a run.
type Report struct {
	Date        string          `json:"date"`
	Mode        string          `json:"mode"`
	DurationS   float64         `json:"duration_s"`
	Interrupted bool            `json:"interrupted,omitempty"`
	Machine     Machine         `json:"machine"`
	Servers     []*ServerResult `json:"servers"` // ours, reference
	Floors      *Floors         `json:"floors"`
	Ratios      []Row           `json:"ratios"`
	Targets     []TargetCheck   `json:"targets"`
	MCP         *MCPResult      `json:"mcp,omitempty"`
}

// Row is one metric of the comparison table. Ratios are ours/ref and
// ours/floor: the median of the per-round ratios when the metric was
// interleaved in rounds, else the ratio of the summary values.
type Row struct {
	Metric    string   `json:"metric"`
	Unit      string   `json:"unit"`
	Better    string   `json:"better"` // "lower" or "higher"
	Ours      *float64 `json:"ours"`
	Ref       *float64 `json:"ref"`
	Floor     *float64 `json:"floor,omitempty"`
	OursRef   *float64 `json:"ours_over_ref"`
	OursFloor *float64 `json:"ours_over_floor,omitempty"`
	PerRound  bool     `json:"per_round_median,omitempty"`
}

// TargetCheck is one target of docs/benchmarking.md §6.
type TargetCheck struct {
	Target   string `json:"target"`
	Measured string `json:"measured"`
	Pass     *bool  `json:"pass"` // nil: not measured
}

// omitRaw drops raw samples from Latency output (the stdout summary).
var omitRaw bool

// MarshalJSON writes a Latency, without raw samples when omitRaw is set.
func (l Latency) MarshalJSON() ([]byte, error) {
	type plain Latency
	p := plain(l)
	if omitRaw {
		p.Raw = nil
	}
	return json.Marshal(p)
}

func fp(v float64) *float64 { return &v }

// ratio returns a/b, or nil when either is missing or b is not positive.
func ratio(a, b *float64) *float64 {
	if a == nil || b == nil || *b <= 0 {
		return nil
	}
	return fp(round3(*a / *b))
}

// roundRatio is the median of a[i]/b[i] over the rounds both have.
func roundRatio(a, b []float64) *float64 {
	var r []float64
	for i := range min(len(a), len(b)) {
		if b[i] > 0 {
			r = append(r, a[i]/b[i])
		}
	}
	if len(r) == 0 {
		return nil
	}
	return fp(round3(median(r)))
}

func latP50(l *Latency) *float64 {
	if l == nil || l.N == 0 {
		return nil
	}
	return fp(l.P50)
}

func latRounds(l *Latency) []float64 {
	if l == nil {
		return nil
	}
	return l.Rounds
}

// newRow fills a row, preferring per-round ratios when both sides have
// the same number of rounds.
func newRow(metric, unit, better string, ours, ref, floor *float64, oursR, refR, floorR []float64) Row {
	r := Row{Metric: metric, Unit: unit, Better: better, Ours: ours, Ref: ref, Floor: floor}
	r.OursRef, r.OursFloor = ratio(ours, ref), ratio(ours, floor)
	if ours != nil && len(oursR) > 1 && len(oursR) == len(refR) {
		r.OursRef, r.PerRound = roundRatio(oursR, refR), true
	}
	if ours != nil && floor != nil && len(oursR) > 1 && len(oursR) == len(floorR) {
		r.OursFloor, r.PerRound = roundRatio(oursR, floorR), true
	}
	return r
}

func latRow(metric string, ours, ref, floor *Latency) Row {
	return newRow(metric, "ms", "lower", latP50(ours), latP50(ref), latP50(floor), latRounds(ours), latRounds(ref), latRounds(floor))
}

// tpRuns returns the MiB/s of every run, or nil if any run failed (then
// rounds cannot be paired).
func tpRuns(t *Throughput) []float64 {
	if t == nil || t.Failed > 0 {
		return nil
	}
	var v []float64
	for _, r := range t.Runs {
		v = append(v, r.MiBps)
	}
	return v
}

func tpVal(t *Throughput) *float64 {
	if t == nil || len(t.Runs) == t.Failed {
		return nil
	}
	return fp(t.MiBps)
}

func tpRow(metric string, ours, ref, floor *Throughput) Row {
	return newRow(metric, "MiB/s", "higher", tpVal(ours), tpVal(ref), tpVal(floor), tpRuns(ours), tpRuns(ref), tpRuns(floor))
}

func findConc(list []*Concurrency, k int, mode string) *Durations {
	for _, c := range list {
		if c.K == k && c.Mode == mode && len(c.Runs) > 0 {
			return &c.Durations
		}
	}
	return nil
}

func durVal(d *Durations) *float64 {
	if d == nil || len(d.Runs) == 0 {
		return nil
	}
	return fp(d.Median)
}

func durRuns(d *Durations) []float64 {
	if d == nil || d.Errors > 0 {
		return nil
	}
	return d.Runs
}

func memVal(m *Memory, f func(*Memory) float64) *float64 {
	if m == nil || m.Error != "" {
		return nil
	}
	return fp(f(m))
}

func tailVal(t *Tail) *float64 {
	if t == nil || t.Runs == 0 {
		return nil
	}
	return fp(t.Fraction)
}

// buildReport assembles the report from the finished bench.
func buildReport(cfg Config, mach Machine, b *Bench, started time.Time, interrupted bool) *Report {
	rows := buildRows(cfg, b)
	return &Report{
		Date:        started.UTC().Format("2006-01-02 15:04 UTC"),
		Mode:        cfg.Mode(),
		DurationS:   round3(time.Since(started).Seconds()),
		Interrupted: interrupted,
		Machine:     mach,
		Servers:     []*ServerResult{b.ours.Res, b.ref.Res},
		Floors:      b.floors,
		Ratios:      rows,
		Targets:     evalTargets(rows, b),
		MCP:         b.mcp,
	}
}

// buildRows computes the comparison table.
func buildRows(cfg Config, b *Bench) []Row {
	o, r, f := &b.ours.Res.Metrics, &b.ref.Res.Metrics, b.floors
	rows := []Row{
		latRow("#1 spawn latency p50, pipes", o.SpawnPipe, r.SpawnPipe, f.Spawn),
		latRow("#1 spawn latency p50, PTY", o.SpawnPTY, r.SpawnPTY, f.PTYSpawn),
		latRow("#2 completion latency p50, pipes", o.CompletionPipe, r.CompletionPipe, f.Spawn),
		latRow("#2 completion latency p50, PTY", o.CompletionPTY, r.CompletionPTY, f.PTYSpawn),
		latRow("#3 first-byte latency p50", o.FirstByte, r.FirstByte, f.FirstByte),
		tpRow("#4 pipe throughput", o.PipeThroughput, r.PipeThroughput, f.PipeRead),
		tpRow("#5 PTY throughput", o.PTYThroughput, r.PTYThroughput, f.PTYRead),
		tpRow("#5 PTY throughput vs a busy-polling PTY reader (informational)", o.PTYThroughput, r.PTYThroughput, f.PTYReadSpin),
	}
	for _, k := range cfg.ConcKs {
		fl := f.Concurrency[fmt.Sprint(k)]
		for _, mode := range []string{"one_connection", "k_connections"} {
			od, rd := findConc(o.Concurrency, k, mode), findConc(r.Concurrency, k, mode)
			label := fmt.Sprintf("#6 %d × sleep 0.2, one connection", k)
			if mode == "k_connections" {
				label = fmt.Sprintf("#6 %d × sleep 0.2, %d connections", k, k)
			}
			rows = append(rows, newRow(label, "s", "lower", durVal(od), durVal(rd), durVal(fl), durRuns(od), durRuns(rd), durRuns(fl)))
		}
		if cd := findConc(r.Concurrency, k, "one_connection_cr32"); cd != nil {
			od := findConc(o.Concurrency, k, "one_connection")
			rows = append(rows, newRow(fmt.Sprintf("#6 %d × sleep 0.2, one connection vs ref --concurrent-requests 32", k),
				"s", "lower", durVal(od), durVal(cd), durVal(fl), durRuns(od), durRuns(cd), durRuns(fl)))
		}
	}
	kib := func(m *Memory) float64 { return m.KiBPerChild }
	fds := func(m *Memory) float64 { return m.FDsPerChild }
	thr := func(m *Memory) float64 { return m.ThreadsPerChild }
	for _, mm := range []struct {
		name   string
		ou, re *Memory
	}{{"pipes", o.MemoryPipe, r.MemoryPipe}, {"PTY", o.MemoryPTY, r.MemoryPTY}} {
		rows = append(rows,
			newRow("#7 server RSS per idle child, "+mm.name, "KiB", "lower", memVal(mm.ou, kib), memVal(mm.re, kib), nil, nil, nil, nil),
			newRow("#7 server fds per idle child, "+mm.name, "fds", "lower", memVal(mm.ou, fds), memVal(mm.re, fds), nil, nil, nil, nil),
			newRow("#7 server threads per idle child, "+mm.name, "threads", "lower", memVal(mm.ou, thr), memVal(mm.re, thr), nil, nil, nil, nil),
		)
	}
	var scO, scR *float64
	if o.SlowConsumer != nil && o.SlowConsumer.Error == "" {
		scO = fp(float64(o.SlowConsumer.MaxGrowthKiB))
	}
	if r.SlowConsumer != nil && r.SlowConsumer.Error == "" {
		scR = fp(float64(r.SlowConsumer.MaxGrowthKiB))
	}
	rows = append(rows,
		newRow("#8 slow consumer: max server RSS growth", "KiB", "lower", scO, scR, nil, nil, nil, nil),
		newRow("#9 tail completeness, PTY", "fraction", "higher", tailVal(o.TailPTY), tailVal(r.TailPTY), nil, nil, nil, nil),
		newRow("#9 tail completeness, pipes", "fraction", "higher", tailVal(o.TailPipe), tailVal(r.TailPipe), nil, nil, nil, nil),
		latRow("#10 fs/getMetadata RTT p50", o.Metadata, r.Metadata, nil),
		latRow("#11 sandboxed spawn p50", o.SandboxSpawn, r.SandboxSpawn, nil),
		latRow("#11 sandboxed completion p50", o.SandboxClosed, r.SandboxClosed, nil),
		latRow("#11 sandboxed fs/writeFile p50", o.SandboxWrite, r.SandboxWrite, nil),
		latRow("#12 codex exec run -- /bin/true p50", o.ExecRun, nil, f.ExecRunRaw),
		latRow("#16 fs/walk of 100,000 entries (5 calls of 20,000) p50", o.Walk, r.Walk, nil),
	)
	rows = append(append(rows, clientRows(*o)...), cmdExecRows(*o, *r, f)...)
	rows = append(rows, httpRows(*o, *r, f)...)
	rows = append(rows, robustRows(*o, *r)...)
	rows = append(rows, handleRows(*o, *r)...)
	rows = append(rows, proxyRows(*o, *r, f)...)
	return append(rows, mcpRows(b.mcp)...)
}

func pass(v bool) *bool { return &v }

// ratioTarget checks "ours/ref OP x [and ours/floor OP y]" on a row.
func ratioTarget(rows []Row, metric, target string, maxRef, maxFloor, minRef, minFloor float64) TargetCheck {
	tc := TargetCheck{Target: target, Measured: "not measured"}
	var row *Row
	for i := range rows {
		if rows[i].Metric == metric {
			row = &rows[i]
		}
	}
	if row == nil || row.Ours == nil {
		return tc
	}
	ok, missing := true, false
	var parts []string
	check := func(r *float64, name string, lo, hi float64) {
		if lo == 0 && hi == 0 {
			return
		}
		if r == nil {
			parts = append(parts, name+" n/a")
			missing = true
			return
		}
		parts = append(parts, fmt.Sprintf("%.2f× %s", *r, name))
		if (hi > 0 && *r > hi) || (lo > 0 && *r < lo) {
			ok = false
		}
	}
	check(row.OursRef, "ref", minRef, maxRef)
	check(row.OursFloor, "floor", minFloor, maxFloor)
	tc.Measured = fmt.Sprintf("%s (ours %s %s", strings.Join(parts, ", "), fmtVal(row.Ours), row.Unit)
	if row.Ref != nil {
		tc.Measured += fmt.Sprintf(", ref %s", fmtVal(row.Ref))
	}
	if row.Floor != nil {
		tc.Measured += fmt.Sprintf(", floor %s", fmtVal(row.Floor))
	}
	tc.Measured += ")"
	if !missing {
		tc.Pass = pass(ok)
	}
	return tc
}

// evalTargets checks docs/benchmarking.md §6 for our server.
func evalTargets(rows []Row, b *Bench) []TargetCheck {
	t := []TargetCheck{
		ratioTarget(rows, "#1 spawn latency p50, pipes", "spawn latency p50 ≤ 0.25× ref and ≤ 1.5× os/exec floor", 0.25, 1.5, 0, 0),
		ratioTarget(rows, "#1 spawn latency p50, PTY", "(PTY) spawn latency p50 ≤ 0.25× ref and ≤ 1.5× creack/pty floor", 0.25, 1.5, 0, 0),
		ratioTarget(rows, "#2 completion latency p50, pipes", "completion latency p50 ≤ 0.2× ref and ≤ 1.5× os/exec floor", 0.2, 1.5, 0, 0),
		ratioTarget(rows, "#2 completion latency p50, PTY", "(PTY) completion latency p50 ≤ 0.2× ref and ≤ 1.5× creack/pty floor", 0.2, 1.5, 0, 0),
		ratioTarget(rows, "#3 first-byte latency p50", "first-byte latency p50 ≤ 0.25× ref", 0.25, 0, 0, 0),
		ratioTarget(rows, "#4 pipe throughput", "pipe throughput ≥ 2× ref", 0, 0, 2, 0),
		ratioTarget(rows, "#5 PTY throughput", "PTY throughput ≥ 1.0× ref and ≥ 0.9× raw PTY read floor", 0, 0, 1.0, 0.9),
		ratioTarget(rows, "#6 100 × sleep 0.2, one connection", "concurrency (100 × sleep 0.2, one connection) ≤ 1.3× the 100-goroutine os/exec floor", 0, 1.3, 0, 0),
		ratioTarget(rows, "#7 server RSS per idle child, pipes", "memory per idle process (pipes) ≤ 0.5× ref", 0.5, 0, 0, 0),
		ratioTarget(rows, "#7 server RSS per idle child, PTY", "memory per idle process (PTY) ≤ 0.5× ref", 0.5, 0, 0, 0),
		ratioTarget(rows, "#11 sandboxed completion p50", "sandboxed start→closed of /bin/true ≤ 0.3× the reference", 0.3, 0, 0, 0),
		ratioTarget(rows, "#12 codex exec run -- /bin/true p50", "codex exec run -- true ≤ 6× a raw spawn of /bin/true", 0, 6, 0, 0),
	}
	o := b.ours.Res.Metrics
	sc := TargetCheck{Target: "slow consumer: RSS growth ≤ 8 MiB, child blocked, exactly 1 GiB after resuming", Measured: "not measured"}
	if s := o.SlowConsumer; s != nil {
		sc.Measured = fmt.Sprintf("growth %d KiB, child blocked %v, %d of %d bytes, exit ok %v", s.MaxGrowthKiB, s.ChildBlocked, s.Bytes, s.Expected, s.ExitCodeOK)
		if s.Error != "" {
			sc.Measured += "; error: " + s.Error
		}
		sc.Pass = pass(s.Pass && s.Error == "")
	}
	t = append(t, sc)
	t = append(append(t, clientTargets(rows)...), cmdExecTargets(rows)...)
	t = append(t, httpTargets(rows, o)...)
	t = append(t, robustTargets(o)...)
	t = append(t, handleTargets(rows)...)
	t = append(t, proxyTargets(rows, o)...)
	t = append(t, mcpTargets(rows)...)
	for _, tl := range []struct {
		name string
		v    *Tail
	}{{"PTY", o.TailPTY}, {"pipes", o.TailPipe}} {
		tc := TargetCheck{Target: "tail completeness 100% over ≥ 100 runs, " + tl.name, Measured: "not measured"}
		if tl.v != nil && tl.v.Runs > 0 {
			tc.Measured = fmt.Sprintf("%d/%d complete", tl.v.Complete, tl.v.Runs)
			tc.Pass = pass(tl.v.Complete == tl.v.Runs && tl.v.Runs >= 100)
		}
		t = append(t, tc)
	}
	return t
}

// fmtVal formats a value compactly.
func fmtVal(v *float64) string {
	if v == nil {
		return "–"
	}
	x := *v
	switch {
	case x == 0:
		return "0"
	case x >= 100 || x <= -100:
		return fmt.Sprintf("%.0f", x)
	case x >= 10 || x <= -10:
		return fmt.Sprintf("%.1f", x)
	default:
		return fmt.Sprintf("%.2f", x)
	}
}

func fmtRatio(v *float64) string {
	if v == nil {
		return "–"
	}
	return fmt.Sprintf("%.2f×", *v)
}

func fmtPass(p *bool) string {
	switch {
	case p == nil:
		return "n/a"
	case *p:
		return "PASS"
	default:
		return "FAIL"
	}
}

// print writes one JSON object per server and one for the floors, each on
// one line and without raw samples (those are in the -json file), then the
// ratio table and the targets.
func (rep *Report) print(w io.Writer) {
	omitRaw = true
	defer func() { omitRaw = false }()
	for _, s := range rep.Servers {
		data, _ := json.Marshal(s)
		fmt.Fprintf(w, "%s\n", data)
	}
	data, _ := json.Marshal(map[string]any{"floors": rep.Floors})
	fmt.Fprintf(w, "%s\n\n", data)
	fmt.Fprintf(w, "%s, %s\n", rep.Date, rep.Mode)
	fmt.Fprintf(w, "machine: %d CPUs, kernel %s, load %s, %s\n\n", rep.Machine.CPUs, rep.Machine.Kernel, rep.Machine.LoadAvg, rep.Machine.Go)
	fmt.Fprintf(w, "%-70s %-8s %10s %10s %10s %10s %10s\n", "metric", "unit", "ours", "ref", "floor", "ours/ref", "ours/floor")
	for _, r := range rep.Ratios {
		fmt.Fprintf(w, "%-70s %-8s %10s %10s %10s %10s %10s\n", r.Metric, r.Unit, fmtVal(r.Ours), fmtVal(r.Ref), fmtVal(r.Floor), fmtRatio(r.OursRef), fmtRatio(r.OursFloor))
	}
	fmt.Fprintln(w, "\ntargets (docs/benchmarking.md §6):")
	for _, t := range rep.Targets {
		fmt.Fprintf(w, "  %-4s %s: %s\n", fmtPass(t.Pass), t.Target, t.Measured)
	}
	for _, s := range rep.Servers {
		c := s.Checks
		fmt.Fprintf(w, "checks %-9s exit-code errors %d, output after closed %d, seq disorder %d, closed without exited %d, stray %d, retained %s, stop: %s\n",
			s.Server+":", c.ExitCodeErrors, c.OutputAfterClosed, c.SeqDisorder, c.MissingExited, c.Stray, fmtRetained(c.RetainedBytes), c.StopStatus)
		for k, v := range s.Errors {
			fmt.Fprintf(w, "  error %s %s: %s\n", s.Server, k, v)
		}
	}
	if rep.Interrupted {
		fmt.Fprintln(w, "\nINTERRUPTED: the results are partial")
	}
}

func fmtRetained(n *int64) string {
	if n == nil {
		return "–"
	}
	return fmt.Sprintf("%d bytes", *n)
}

// writeJSON writes the full report, raw samples included.
func (rep *Report) writeJSON(path string) error {
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

func fmtLat(l *Latency) string {
	if l == nil || l.N == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f / %.2f / %.2f / %.2f (n=%d)", l.Min, l.P50, l.P95, l.Max, l.N)
}

// markdown renders a section for docs/BENCHMARKS.md.
func (rep *Report) markdown() string {
	var b strings.Builder
	ours, ref := rep.Servers[0], rep.Servers[1]
	fmt.Fprintf(&b, "### Run of %s\n\n", rep.Date)
	fmt.Fprintf(&b, "- Machine: %d CPUs, Linux %s, load average %s at the start, %s\n", rep.Machine.CPUs, rep.Machine.Kernel, rep.Machine.LoadAvg, rep.Machine.Go)
	fmt.Fprintf(&b, "- Ours: %s (`%s`)\n", orUnknown(ours.Version), ours.Binary)
	fmt.Fprintf(&b, "- Reference: %s (`%s`)\n", orUnknown(ref.Version), ref.Binary)
	fmt.Fprintf(&b, "- Mode: %s\n", rep.Mode)
	rep.MCP.markdown(&b)
	fmt.Fprintf(&b, "- Client: `go run ./cmd/codex-bench` (coder/websocket, TCP_QUICKACK after every read); ratios are medians of per-round ratios where the metric was interleaved in rounds\n")
	if rep.Interrupted {
		fmt.Fprintf(&b, "- **Interrupted: partial results**\n")
	}
	fmt.Fprintf(&b, "\n| metric | unit | ours | reference | floor | ours/ref | ours/floor |\n|---|---|---:|---:|---:|---:|---:|\n")
	for _, r := range rep.Ratios {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", r.Metric, r.Unit, fmtVal(r.Ours), fmtVal(r.Ref), fmtVal(r.Floor), fmtRatio(r.OursRef), fmtRatio(r.OursFloor))
	}
	fmt.Fprintf(&b, "\nLatency detail, ms (min / p50 / p95 / max):\n\n| metric | ours | reference | floor |\n|---|---|---|---|\n")
	o, r, f := ours.Metrics, ref.Metrics, rep.Floors
	for _, l := range []struct {
		name       string
		ou, re, fl *Latency
	}{
		{"spawn, pipes", o.SpawnPipe, r.SpawnPipe, f.Spawn},
		{"spawn, PTY", o.SpawnPTY, r.SpawnPTY, f.PTYSpawn},
		{"completion, pipes", o.CompletionPipe, r.CompletionPipe, f.Spawn},
		{"completion, PTY", o.CompletionPTY, r.CompletionPTY, f.PTYSpawn},
		{"first byte", o.FirstByte, r.FirstByte, f.FirstByte},
		{"fs/getMetadata", o.Metadata, r.Metadata, nil},
		{"sandboxed spawn", o.SandboxSpawn, r.SandboxSpawn, nil},
		{"sandboxed completion", o.SandboxClosed, r.SandboxClosed, nil},
		{"sandboxed fs/writeFile", o.SandboxWrite, r.SandboxWrite, nil},
		{"fs/walk, 100,000 entries", o.Walk, r.Walk, nil},
	} {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", l.name, fmtLat(l.ou), fmtLat(l.re), fmtLat(l.fl))
	}
	cmdExecDetail(&b, o.CmdExec, r.CmdExec, f)
	proxyDetail(&b, o.Proxy, r.Proxy, f)
	scaleDetail(&b, o.Scale, r.Scale)
	fmt.Fprintf(&b, "\nTargets (docs/benchmarking.md §6), ours:\n\n| target | measured | result |\n|---|---|---|\n")
	for _, t := range rep.Targets {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", t.Target, t.Measured, fmtPass(t.Pass))
	}
	fmt.Fprintf(&b, "\nChecks:\n\n")
	for _, s := range rep.Servers {
		c := s.Checks
		fmt.Fprintf(&b, "- %s: exit-code errors %d, output after closed %d, seq disorder %d, closed without exited %d, retained after a 256 MiB run %s, SIGTERM: %s\n",
			s.Server, c.ExitCodeErrors, c.OutputAfterClosed, c.SeqDisorder, c.MissingExited, fmtRetained(c.RetainedBytes), c.StopStatus)
		for k, v := range s.Errors {
			fmt.Fprintf(&b, "  - error in %s: %s\n", k, v)
		}
	}
	return b.String()
}

func orUnknown(s string) string {
	if s == "" {
		return "version unknown"
	}
	return s
}
