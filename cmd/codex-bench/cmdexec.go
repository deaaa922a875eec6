package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"
	"unicode/utf8"
)

// The command/exec rows (issue 11): our exec-server and the reference's
// app-server, each over stdio, each started fresh for this group, on one
// client. #14 is the round trip of command/exec of /bin/true, #15 the
// buffered output of a 64 MiB command (one JSON result line).

// cmdExecSize is the output of each #15 run.
const cmdExecSize = 64 << 20

// cmdExecScript prints cmdExecSize bytes of printable text in lines, so the
// servers' UTF-8 checks and the JSON escaping of newlines are exercised as
// with real log output.
var cmdExecScript = fmt.Sprintf("yes 'codex bench: the quick brown fox jumps over the lazy dog 0123456789' | head -c %d", cmdExecSize)

// unsandboxedPolicy is the sandboxPolicy that runs a command without a
// sandbox on both servers.
var unsandboxedPolicy = map[string]any{"type": "dangerFullAccess"}

// PeakRSS is the server's peak RSS growth over a run (VmHWM reset through
// clear_refs before it), per run.
type PeakRSS struct {
	GrowthKiB []int64 `json:"growth_kib"`
	MaxKiB    int64   `json:"max_growth_kib"`
}

func (p *PeakRSS) add(kib int64) {
	p.GrowthKiB = append(p.GrowthKiB, kib)
	p.MaxKiB = max(p.MaxKiB, kib)
}

// CmdExecMetrics are one server's command/exec measurements.
type CmdExecMetrics struct {
	Transport   string      `json:"transport"`
	True        *Latency    `json:"true_unsandboxed,omitempty"`
	TrueDefault *Latency    `json:"true_default_sandbox,omitempty"`
	Output      *Throughput `json:"buffered_output,omitempty"`
	OutputRSS   *PeakRSS    `json:"buffered_output_peak_rss,omitempty"`
}

// startCmdExecServer starts ours as `exec-server --listen stdio` (exec-server
// handshake) or the reference as `app-server` (app-server handshake with
// the experimentalApi capability).
func startCmdExecServer(ctx context.Context, bin, scratch string, ours bool) (*StdioClient, error) {
	label, args := "ref-app-server", []string{"app-server"}
	init := map[string]any{"clientInfo": map[string]any{"name": "bench", "version": "1"}, "capabilities": map[string]any{"experimentalApi": true}}
	var initialized any
	if ours {
		label, args = "ours-stdio", []string{"exec-server", "--listen", "stdio"}
		init, initialized = map[string]any{"clientName": "bench"}, map[string]any{}
	}
	c, err := StartStdio(label, bin, args, scratch)
	if err != nil {
		return nil, err
	}
	hctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, _, err := c.Call(hctx, "initialize", init); err != nil {
		c.Close()
		return nil, fmt.Errorf("%s: initialize: %w", label, err)
	}
	if err := c.Notify("initialized", initialized); err != nil {
		c.Close()
		return nil, fmt.Errorf("%s: initialized: %w", label, err)
	}
	return c, nil
}

// cmdExecTrueSampler times command/exec of /bin/true, request to response
// (policy nil: the server's default sandbox).
func cmdExecTrueSampler(c *StdioClient, policy any) sampler {
	params := map[string]any{"command": []string{"/bin/true"}}
	if policy != nil {
		params["sandboxPolicy"] = policy
	}
	return func(ctx context.Context) ([]time.Duration, error) {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		r, sent, err := c.Call(ctx, "command/exec", params)
		if err != nil {
			return nil, err
		}
		var res struct {
			ExitCode int `json:"exitCode"`
		}
		if err := json.Unmarshal(r.Result, &res); err != nil || res.ExitCode != 0 {
			return nil, fmt.Errorf("command/exec /bin/true: result %.200s", r.Result)
		}
		return []time.Duration{r.At.Sub(sent)}, nil
	}
}

// cmdExecOutputRun runs cmdExecScript buffered with no cap and returns
// the run (bytes of stdout over request→response) and the server's peak
// RSS growth in KiB.
func cmdExecOutputRun(ctx context.Context, c *StdioClient) (ThroughputRun, int64, error) {
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", c.Pid), []byte("5"), 0); err != nil {
		return ThroughputRun{}, 0, fmt.Errorf("resetting the peak RSS: %w", err)
	}
	base, err := readProcStatus(c.Pid)
	if err != nil {
		return ThroughputRun{}, 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, 180*time.Second)
	defer cancel()
	r, sent, err := c.Call(ctx, "command/exec", map[string]any{
		"command": []string{"/bin/sh", "-c", cmdExecScript}, "sandboxPolicy": unsandboxedPolicy,
		"disableOutputCap": true, "timeoutMs": 120000,
	})
	if err != nil {
		return ThroughputRun{}, 0, err
	}
	d := r.At.Sub(sent)
	hwm, err := readHWM(c.Pid)
	if err != nil {
		return ThroughputRun{}, 0, err
	}
	n, ok := jsonStringLen(r.Result, []byte(`"stdout":"`))
	run := newRun(n, d, 0, ok && n == cmdExecSize)
	if !run.OK {
		run.FirstError = fmt.Sprintf("stdout of %d bytes (parsed %v), want %d", n, ok, cmdExecSize)
	}
	return run, hwm - base.RSSKiB, nil
}

// cmdExecFloorRun runs cmdExecScript with os/exec and reads its stdout
// to the end: the machine's rate for the command itself.
func cmdExecFloorRun(ctx context.Context) ThroughputRun {
	cmd := floorCmd(ctx, "/bin/sh", "-c", cmdExecScript)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return ThroughputRun{FirstError: err.Error()}
	}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return ThroughputRun{FirstError: err.Error()}
	}
	n, cerr := countAll(out)
	werr := cmd.Wait()
	run := newRun(n, time.Since(t0), 0, cerr == nil && werr == nil && n == cmdExecSize)
	if !run.OK {
		run.FirstError = fmt.Sprintf("%d bytes, read error %v, exit %v", n, cerr, werr)
	}
	return run
}

// jsonStringLen returns the decoded UTF-8 length of the JSON string that
// follows key (which ends in its opening quote).
func jsonStringLen(b, key []byte) (int64, bool) {
	i := bytes.Index(b, key)
	if i < 0 {
		return 0, false
	}
	b = b[i+len(key):]
	var n int64
	for len(b) > 0 {
		j := bytes.IndexAny(b, `"\`)
		if j < 0 {
			return n, false
		}
		n += int64(j)
		if b[j] == '"' {
			return n, true
		}
		b = b[j:]
		if len(b) < 2 {
			return n, false
		}
		if b[1] != 'u' {
			n++
			b = b[2:]
			continue
		}
		if len(b) < 6 {
			return n, false
		}
		v, err := strconv.ParseUint(string(b[2:6]), 16, 16)
		if err != nil {
			return n, false
		}
		switch {
		case v >= 0xD800 && v < 0xDC00: // a surrogate pair: 4 bytes in all
			n += 4
		case v >= 0xDC00 && v < 0xE000:
		default:
			n += int64(utf8.RuneLen(rune(v)))
		}
		b = b[6:]
	}
	return n, false
}

// runCmdExec measures #14 (unsandboxed, then the default sandbox) and #15,
// interleaved between the two servers.
func (b *Bench) runCmdExec(ctx context.Context) {
	cfg := b.cfg
	clients := make([]*StdioClient, 2) // ref, ours
	for i, t := range b.targets() {
		c, err := startCmdExecServer(ctx, t.Res.Binary, b.scratch, t == b.ours)
		if err != nil {
			t.setError("command_exec", err)
			return // the servers started so far are closed by their defers
		}
		defer c.Close()
		clients[i] = c
		logf("cmdexec: %s stdio server pid %d", c.Label, c.Pid)
	}
	res := []*CmdExecMetrics{{Transport: "app-server, stdio"}, {Transport: "exec-server --listen stdio"}}
	for _, mode := range []struct {
		name   string
		policy any
	}{{"dangerFullAccess", unsandboxedPolicy}, {"default sandbox", nil}} {
		logf("cmdexec: command/exec /bin/true, %s (N=%d, %d rounds)", mode.name, cfg.N, cfg.Rounds)
		subs := []subject{
			{"ref", cmdExecTrueSampler(clients[0], mode.policy)},
			{"ours", cmdExecTrueSampler(clients[1], mode.policy)},
		}
		if mode.policy != nil { // the os/exec floor of an unsandboxed run
			subs = append(subs, subject{"floor", floorSpawn})
		}
		s := interleave(ctx, subs, 1, cfg.Warm, cfg.N, cfg.Rounds)
		metric := "command_exec_true"
		if mode.policy == nil {
			metric += "_default_sandbox"
		}
		recordErrors(metric, false, b.targets(), s)
		for i := range res {
			if mode.policy == nil {
				res[i].TrueDefault = s[i].latency(0)
			} else {
				res[i].True = s[i].latency(0)
			}
		}
		if mode.policy != nil {
			b.floors.CmdExecTrue = s[2].latency(0)
		}
	}
	rounds := cfg.PipeRounds
	logf("cmdexec: buffered %d MiB output × %d rounds", cmdExecSize>>20, rounds)
	for i := range res {
		res[i].Output = &Throughput{Command: "sh -c \"" + cmdExecScript + "\", disableOutputCap", Size: cmdExecSize}
		res[i].OutputRSS = &PeakRSS{}
	}
	floor := &Throughput{Command: "os/exec of the same command, stdout read to the end", Size: cmdExecSize}
	for r := range rounds {
		for _, i := range order(3, r) {
			if ctx.Err() != nil {
				break
			}
			if i == 2 {
				floor.add(cmdExecFloorRun(ctx))
				continue
			}
			run, kib, err := cmdExecOutputRun(ctx, clients[i])
			if err != nil {
				run.FirstError = err.Error()
				b.targets()[i].setError("command_exec_output", err)
			} else {
				res[i].OutputRSS.add(kib)
			}
			res[i].Output.add(run)
		}
	}
	b.ref.Res.Metrics.CmdExec, b.ours.Res.Metrics.CmdExec = res[0], res[1]
	b.floors.CmdExecOutput = floor
}

// cmdExecRows are the report rows of #14 and #15.
func cmdExecRows(o, r Metrics, f *Floors) []Row {
	oc, rc := o.CmdExec, r.CmdExec
	if oc == nil {
		oc = &CmdExecMetrics{}
	}
	if rc == nil {
		rc = &CmdExecMetrics{}
	}
	rss := func(p *PeakRSS) *float64 {
		if p == nil || len(p.GrowthKiB) == 0 {
			return nil
		}
		return fp(float64(p.MaxKiB))
	}
	return []Row{
		latRow("#14 command/exec /bin/true p50, dangerFullAccess", oc.True, rc.True, f.CmdExecTrue),
		latRow("#14 command/exec /bin/true p50, default sandbox (read-only)", oc.TrueDefault, rc.TrueDefault, nil),
		tpRow("#15 command/exec buffered 64 MiB output", oc.Output, rc.Output, f.CmdExecOutput),
		newRow("#15 the same: max server peak RSS growth", "KiB", "lower", rss(oc.OutputRSS), rss(rc.OutputRSS), nil, nil, nil, nil),
	}
}

// cmdExecTargets are issue 11's targets.
func cmdExecTargets(rows []Row) []TargetCheck {
	return []TargetCheck{
		ratioTarget(rows, "#14 command/exec /bin/true p50, dangerFullAccess", "command/exec of /bin/true round trip ≤ 0.2× the app-server's", 0.2, 0, 0, 0),
		ratioTarget(rows, "#15 command/exec buffered 64 MiB output", "command/exec buffered 64 MiB output ≥ 2× the app-server's", 0, 0, 2, 0),
	}
}

// cmdExecDetail writes the #14 lines of the latency detail table.
func cmdExecDetail(w io.Writer, o, r *CmdExecMetrics, f *Floors) {
	for _, sandboxed := range []bool{false, true} {
		name := "command/exec /bin/true, dangerFullAccess"
		if sandboxed {
			name = "command/exec /bin/true, default sandbox"
		}
		floor := "–"
		if !sandboxed {
			floor = fmtLat(f.CmdExecTrue)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", name, fmtLat(cmdExecLat(o, sandboxed)), fmtLat(cmdExecLat(r, sandboxed)), floor)
	}
}

// cmdExecLat is the #14 latency of m (nil if not measured).
func cmdExecLat(m *CmdExecMetrics, sandboxed bool) *Latency {
	switch {
	case m == nil:
		return nil
	case sandboxed:
		return m.TrueDefault
	default:
		return m.True
	}
}
