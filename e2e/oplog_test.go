package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// logLine is one JSON log line of the server's stderr.
type logLine map[string]any

// jsonLogs parses every line of stderr as a JSON log line; a line that is
// not one fails the test (with --log-format json, stderr is all JSON).
func jsonLogs(t *testing.T, stderr string) []logLine {
	t.Helper()
	var out []logLine
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		var m logLine
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("stderr line is not JSON: %q", l)
		}
		out = append(out, m)
	}
	return out
}

// find returns the lines with message msg whose fields include want
// (compared as fmt %v strings: JSON numbers are float64).
func find(lines []logLine, msg string, want map[string]any) []logLine {
	var out []logLine
	for _, l := range lines {
		if l["msg"] != msg {
			continue
		}
		ok := true
		for k, v := range want {
			if fmt.Sprint(l[k]) != fmt.Sprint(v) {
				ok = false
			}
		}
		if ok {
			out = append(out, l)
		}
	}
	return out
}

// one returns the single line find matches, failing otherwise.
func one(t *testing.T, lines []logLine, msg string, want map[string]any) logLine {
	t.Helper()
	got := find(lines, msg, want)
	if len(got) != 1 {
		t.Fatalf("%d %q lines with %v, want 1", len(got), msg, want)
	}
	return got[0]
}

// num returns the numeric field k of l, failing if it is not a number.
func num(t *testing.T, l logLine, k string) float64 {
	t.Helper()
	v, ok := l[k].(float64)
	if !ok {
		t.Fatalf("%q: field %s = %v, want a number", l["msg"], k, l[k])
	}
	return v
}

// TestOperatorLogs: at --log-level info with --log-format json, one
// lifecycle over WebSocket leaves parseable lines for the connection, the
// process start and end (pid, argv0 only, exit code or signal, duration,
// bytes), a failed start, a 401, the expiry of a session that ran a
// process (not of one that ran none), and the shutdown with its counts;
// no debug line, no argument and no token.
func TestOperatorLogs(t *testing.T) {
	t.Parallel()
	const token, secret = "tok-e2e-oplog-7f3a", "argv-secret-91c2"
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, "--log-level", "info", "--log-format", "json", "--session-ttl", "300ms",
		"--ws-auth", "capability-token", "--ws-token-file", tokenFile)
	if code, _ := get(t, httpURL(s.URL)+"/", map[string]string{"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
		"Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Authorization": "Bearer wrong-" + secret}); code != 401 {
		t.Fatalf("bad token: %d, want 401", code)
	}
	auth := map[string]string{"Authorization": "Bearer " + token}

	c := dial(t, s.URL, auth)
	sid := c.handshake()
	out, code := c.run("p1", startParams("p1", "/bin/sh", "-c", "printf hello; sleep 0.2; exit 3", secret))
	if out != "hello" || code != 3 {
		t.Fatalf("p1: %q exit %d", out, code)
	}
	if _, code := c.run("k1", startParams("k1", "/bin/sh", "-c", "kill -KILL $$")); code != 137 {
		t.Fatalf("k1: exit %d, want 137", code)
	}
	c.fail("process/start", startParams("bad", "/nonexistent/prog-"+secret[:5]), -32603, "*")
	c.ok("process/start", startParams("live", "/bin/sleep", "1000"), nil)

	oneShot := dial(t, s.URL, auth) // a session without processes
	sidIdle := oneShot.handshake()
	oneShot.close()
	ran := dial(t, s.URL, auth) // a session whose process outlives it
	sidRan := ran.handshake()
	ran.ok("process/start", startParams("orphan", "/bin/sleep", "1000"), nil)
	ran.close()
	deadline := time.Now().Add(10 * time.Second)
	for len(find(jsonLogs(t, s.stderr.String()), "process ended", map[string]any{"processId": "orphan"})) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the detached session's process was not ended after its TTL")
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // the idle session's TTL passed too
	s.stop()

	stderr := s.stderr.String()
	for _, leak := range []string{token, secret} {
		if strings.Contains(stderr, leak) {
			t.Errorf("stderr holds %q", leak)
		}
	}
	lines := jsonLogs(t, stderr)
	for _, l := range lines {
		if l["level"] == "debug" {
			t.Errorf("debug line at --log-level info: %v", l)
		}
	}
	checkConnLogs(t, lines, sid, sidRan)
	checkProcessLogs(t, lines, sid)
	rej := one(t, lines, "websocket authentication rejected", nil)
	if rej["reason"] != "invalid websocket bearer token" || !strings.HasPrefix(fmt.Sprint(rej["peer"]), "127.0.0.1:") {
		t.Errorf("401 line: %v", rej)
	}
	exp := one(t, lines, "detached session expired; killing its processes", nil)
	if exp["session"] != sidRan || exp["level"] != "info" || num(t, exp, "processes_killed") != 1 {
		t.Errorf("expiry line %v, want session %s with 1 process killed", exp, sidRan)
	}
	if got := find(lines, "detached session expired; killing its processes", map[string]any{"session": sidIdle}); len(got) != 0 {
		t.Errorf("the session without processes logged its expiry at info: %v", got)
	}
	orphan := one(t, lines, "process ended", map[string]any{"processId": "orphan", "signal": "SIGKILL"})
	if orphan["cause"] != "detached session expired" {
		t.Errorf("orphan's end: %v", orphan)
	}
	// The drain (docs/operations.md §5) ends "live" with SIGTERM; nothing
	// is left to kill at the shutdown.
	drain := one(t, lines, "draining", nil)
	if num(t, drain, "processes") != 1 {
		t.Errorf("drain line %v, want 1 process", drain)
	}
	down := one(t, lines, "shutting down", nil)
	if num(t, down, "sessions") != 1 || num(t, down, "processes_killed") != 0 {
		t.Errorf("shutdown line %v, want 1 session, 0 processes killed", down)
	}
	one(t, lines, "process ended", map[string]any{"processId": "live", "exit_code": 143, "signal": "SIGTERM", "cause": "server shutting down (graceful)"})
}

// checkConnLogs checks the opened and closed lines of the connections.
func checkConnLogs(t *testing.T, lines []logLine, sids ...string) {
	t.Helper()
	opened := find(lines, "connection opened", nil)
	if len(opened) != 3 {
		t.Errorf("%d connection opened lines, want 3 (the 401 is not a connection)", len(opened))
	}
	for _, l := range opened {
		if !strings.HasPrefix(fmt.Sprint(l["peer"]), "127.0.0.1:") || l["level"] != "info" {
			t.Errorf("opened line %v", l)
		}
	}
	for _, sid := range sids {
		l := one(t, lines, "connection closed", map[string]any{"session": sid})
		if !strings.HasPrefix(fmt.Sprint(l["peer"]), "127.0.0.1:") || num(t, l, "duration_ms") < 0 {
			t.Errorf("closed line %v", l)
		}
	}
}

// checkProcessLogs checks the start, end and failure lines of the
// processes of session sid.
func checkProcessLogs(t *testing.T, lines []logLine, sid string) {
	t.Helper()
	st := one(t, lines, "process started", map[string]any{"processId": "p1"})
	if st["kind"] != "process/start" || st["session"] != sid || st["argv0"] != "/bin/sh" || st["tty"] != false || st["sandboxed"] != false || num(t, st, "pid") <= 1 || st["level"] != "info" {
		t.Errorf("started line %v", st)
	}
	end := one(t, lines, "process ended", map[string]any{"processId": "p1"})
	if end["kind"] != "process/start" || end["session"] != sid || num(t, end, "exit_code") != 3 || num(t, end, "bytes_out") != 5 || end["pid"] != st["pid"] {
		t.Errorf("ended line %v", end)
	}
	if d := num(t, end, "duration_ms"); d < 200 || d > 10000 {
		t.Errorf("duration_ms %v of a 0.2 s run", d)
	}
	if _, ok := end["signal"]; ok {
		t.Errorf("a process that exited names a signal: %v", end)
	}
	if _, ok := end["cause"]; ok {
		t.Errorf("a process that exited by itself names a cause: %v", end)
	}
	one(t, lines, "process ended", map[string]any{"processId": "k1", "exit_code": 137, "signal": "SIGKILL"})
	fail := one(t, lines, "process start failed", map[string]any{"processId": "bad", "session": sid, "kind": "process/start"})
	if e, _ := fail["error"].(string); e == "" || fail["argv0"] == nil {
		t.Errorf("start failure line %v", fail)
	}
	if got := find(lines, "process started", map[string]any{"processId": "bad"}); len(got) != 0 {
		t.Errorf("a failed start logged as started: %v", got)
	}
}

// TestExecRunServerQuiet: the private server of `codex exec run` logs
// only warnings and errors, so a successful run leaves stderr empty.
func TestExecRunServerQuiet(t *testing.T) {
	t.Parallel()
	out, errOut, code := execRun(t, nil, "--", "sh", "-c", "echo hi")
	if out != "hi\n" || errOut != "" || code != 0 {
		t.Errorf("exec run: stdout %q stderr %q code %d; want hi, nothing, 0", out, errOut, code)
	}
}
