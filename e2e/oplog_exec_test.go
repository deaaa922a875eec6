package e2e

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// execResult is the result of a buffered command/exec.
type execResult struct {
	ExitCode int    `json:"exitCode"`
	Stdout   string `json:"stdout"`
}

// cmdExec runs one command/exec and returns its result, failing on an error.
func (c *client) cmdExec(params map[string]any) execResult {
	c.t.Helper()
	var res execResult
	c.ok("command/exec", params, &res)
	return res
}

// waitLog polls the server's JSON log until a msg line with want appears.
func waitLog(t *testing.T, s *server, msg string, want map[string]any) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(find(jsonLogs(t, s.stderr.String()), msg, want)) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no %q line with %v", msg, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCommandExecOperatorLogs: command/exec runs leave the same info lines
// as process/start ones, marked kind "command/exec": started (pid, argv0
// only, tty, sandboxed) and ended (exit code, signal, duration, bytes, the
// server's cause: timeout, terminate, connection closed), and a failed
// spawn; a run without a processId logs processId "".
func TestCommandExecOperatorLogs(t *testing.T) {
	t.Parallel()
	const secret = "argv-secret-5d1e"
	s := startServer(t, "--log-level", "info", "--log-format", "json")
	c := dial(t, s.URL, nil)
	sid := c.handshake()
	if r := c.cmdExec(execParams("printf hello; sleep 0.2; exit 3", "processId", "ce1")); r.ExitCode != 3 || r.Stdout != "hello" {
		t.Fatalf("ce1: %+v", r)
	}
	unnamed := execParams("printf x")
	unnamed["command"] = []string{"/bin/sh", "-c", "printf x", secret}
	if r := c.cmdExec(unnamed); r.ExitCode != 0 || r.Stdout != "x" {
		t.Fatalf("unnamed: %+v", r)
	}
	if r := c.cmdExec(execParams("exec sleep 30", "processId", "to", "timeoutMs", 200)); r.ExitCode != 124 {
		t.Fatalf("timeout: exit %d, want 124", r.ExitCode)
	}
	c.fail("command/exec", map[string]any{"command": []string{"/nonexistent/prog"}, "processId": "bad", "sandboxPolicy": unsandboxed}, -32603, "failed to spawn command: *")
	id := c.send("command/exec", execParams("exec sleep 30", "processId", "term", "disableTimeout", true))
	c.ok("command/exec/terminate", map[string]any{"processId": "term"}, nil)
	if r := c.next(); string(r.ID) != strconv.Itoa(id) || r.Error != nil {
		t.Fatalf("terminated run: %+v", r)
	}

	gone := dial(t, s.URL, nil)
	sidGone := gone.handshake()
	gone.send("command/exec", execParams("exec sleep 30", "processId", "orphan", "disableTimeout", true))
	waitLog(t, s, "process started", map[string]any{"processId": "orphan"})
	gone.close()
	waitLog(t, s, "process ended", map[string]any{"processId": "orphan"})
	s.stop()

	stderr := s.stderr.String()
	if strings.Contains(stderr, secret) {
		t.Errorf("stderr holds an argument: %q", secret)
	}
	lines := jsonLogs(t, stderr)
	kind := map[string]any{"kind": "command/exec"}
	st := one(t, lines, "process started", map[string]any{"kind": "command/exec", "processId": "ce1"})
	if st["session"] != sid || st["argv0"] != "/bin/sh" || st["tty"] != false || st["sandboxed"] != false || num(t, st, "pid") <= 1 || st["level"] != "info" {
		t.Errorf("started line %v", st)
	}
	end := one(t, lines, "process ended", map[string]any{"kind": "command/exec", "processId": "ce1"})
	if end["session"] != sid || num(t, end, "exit_code") != 3 || num(t, end, "bytes_out") != 5 || end["pid"] != st["pid"] || end["level"] != "info" {
		t.Errorf("ended line %v", end)
	}
	if d := num(t, end, "duration_ms"); d < 200 || d > 10000 {
		t.Errorf("duration_ms %v of a 0.2 s run", d)
	}
	for _, k := range []string{"signal", "cause"} {
		if _, ok := end[k]; ok {
			t.Errorf("a run that exited by itself names a %s: %v", k, end)
		}
	}
	one(t, lines, "process started", map[string]any{"kind": "command/exec", "processId": "", "argv0": "/bin/sh"})
	one(t, lines, "process ended", map[string]any{"kind": "command/exec", "processId": "", "exit_code": 0, "bytes_out": 1})
	to := one(t, lines, "process ended", map[string]any{"kind": "command/exec", "processId": "to"})
	if num(t, to, "exit_code") != 124 || to["signal"] != "SIGKILL" || to["cause"] != "timeout" {
		t.Errorf("timed-out run: %v", to)
	}
	one(t, lines, "process ended", map[string]any{"kind": "command/exec", "processId": "term", "signal": "SIGKILL", "cause": "command/exec/terminate"})
	one(t, lines, "process ended", map[string]any{"kind": "command/exec", "processId": "orphan", "session": sidGone, "exit_code": 137, "cause": "connection closed"})
	fail := one(t, lines, "process start failed", map[string]any{"kind": "command/exec", "processId": "bad", "session": sid, "argv0": "/nonexistent/prog"})
	if e, _ := fail["error"].(string); !strings.HasPrefix(e, "failed to spawn command: ") {
		t.Errorf("start failure line %v", fail)
	}
	if got := find(lines, "process started", map[string]any{"processId": "bad"}); len(got) != 0 {
		t.Errorf("a failed spawn logged as started: %v", got)
	}
	if n, m := len(find(lines, "process started", kind)), len(find(lines, "process ended", kind)); n != 5 || m != 5 {
		t.Errorf("%d started and %d ended command/exec lines, want 5 and 5", n, m)
	}
}

// TestCommandExecMetrics: /metrics counts command/exec runs as processes:
// started, live while they run, start latency, start failures and output.
func TestCommandExecMetrics(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--log-format", "json", "--metrics-listen", "127.0.0.1:0")
	url := metricsURL(t, s)
	c := dial(t, s.URL, nil)
	c.handshake()
	const runs, line = 4, "0123456789abcdef\n"
	for i := range runs {
		p := execParams("printf '" + line + line + "'")
		if i%2 == 0 {
			p["processId"] = "m" + strconv.Itoa(i)
		}
		if r := c.cmdExec(p); r.Stdout != line+line || r.ExitCode != 0 {
			t.Fatalf("run %d: %+v", i, r)
		}
	}
	c.fail("command/exec", map[string]any{"command": []string{"/nonexistent/prog"}, "sandboxPolicy": unsandboxed}, -32603, "*")
	c.fail("command/exec", map[string]any{"command": []string{}, "sandboxPolicy": unsandboxed}, -32600, "*")
	m := scrape(t, url)
	wantMetrics(t, m, map[string]float64{
		"codex_exec_server_processes_started_total":      runs,
		"codex_exec_server_processes_live":               0,
		"codex_exec_server_process_start_seconds_count":  runs,
		"codex_exec_server_process_start_failures_total": 2,
		"codex_exec_server_output_bytes_total":           runs * 2 * float64(len(line)),
	})
	c.send("command/exec", execParams("exec sleep 30", "processId", "live", "disableTimeout", true))
	waitMetric(t, url, "codex_exec_server_processes_live", 1)
	c.close()
	waitMetric(t, url, "codex_exec_server_processes_live", 0)
	if got := scrape(t, url)["codex_exec_server_processes_started_total"]; got != runs+1 {
		t.Errorf("processes_started_total %v, want %d", got, runs+1)
	}
}
