package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// tryDial attempts a WebSocket upgrade and returns the connection, or the
// refusal's status and body.
func tryDial(t *testing.T, url string) (*websocket.Conn, int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, url, nil)
	if err == nil {
		return ws, 0, ""
	}
	if resp == nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	var body []byte
	if resp.Body != nil {
		body, _ = io.ReadAll(resp.Body)
	}
	return nil, resp.StatusCode, string(body)
}

// TestMaxConnectionsRefused: with --max-connections 2 a third upgrade is
// refused with 503 and a body saying why, /readyz still answers, and once
// a connection closes another is accepted. The limit may come from
// CODEX_EXEC_SERVER_MAX_CONNECTIONS. There used to be no limit.
func TestMaxConnectionsRefused(t *testing.T) {
	t.Parallel()
	s := startServerWith(t, binary, func(cmd *exec.Cmd) {
		cmd.Env = append(cmd.Env, "CODEX_EXEC_SERVER_MAX_CONNECTIONS=2")
	})
	c1 := dial(t, s.URL, nil)
	c1.handshake()
	c2 := dial(t, s.URL, nil)
	c2.handshake()
	ws, code, body := tryDial(t, s.URL)
	if ws != nil {
		ws.CloseNow()
		t.Fatal("a third connection was accepted with --max-connections 2")
	}
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "connection limit") || !strings.Contains(body, "2") {
		t.Errorf("third upgrade: %d %q, want 503 naming the connection limit of 2", code, body)
	}
	if code, _ := get(t, httpURL(s.URL)+"/readyz", nil); code != http.StatusOK {
		t.Errorf("/readyz at the connection limit: %d", code)
	}
	if !s.waitStderr("connection refused: limit reached", 5*time.Second) {
		t.Error("no log line for the refused connection")
	}
	c1.close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		ws, code, _ := tryDial(t, s.URL)
		if ws != nil {
			ws.Close(websocket.StatusNormalClosure, "")
			break
		}
		if code != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("after a close: %d, want the slot back", code)
		}
	}
}

// TestMaxSessionsRefused: with --max-sessions 2 a third initialize without
// resumeSessionId gets -32011 saying the server is at its session limit; a
// detached session that ran a process still counts (its processes live
// on), a resume is never refused, and an ended session frees its place.
// There used to be no limit.
func TestMaxSessionsRefused(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--max-sessions", "2", "--session-ttl", "30s", "--log-format", "json", "--metrics-listen", "127.0.0.1:0")
	c1 := dial(t, s.URL, nil)
	sid := c1.handshake()
	c1.ok("process/start", startParams("p", "/bin/sleep", "30"), nil)
	dial(t, s.URL, nil).handshake()
	c3 := dial(t, s.URL, nil)
	c3.fail("initialize", map[string]any{"clientName": "e2e"}, -32011, "server at its session limit (2 sessions); try another server or later")
	c1.close()
	c4 := dial(t, s.URL, nil)
	c4.fail("initialize", map[string]any{"clientName": "e2e"}, -32011, "server at its session limit*")
	c5 := dial(t, s.URL, nil)
	var res struct {
		SessionID string `json:"sessionId"`
	}
	if r := c5.resume(sid); r.Error != nil || json.Unmarshal(r.Result, &res) != nil || res.SessionID != sid {
		t.Errorf("resume: error %+v, session %q, want %q", r.Error, res.SessionID, sid)
	}
	if !s.waitStderr("session refused: limit reached", 5*time.Second) {
		t.Error("no log line for the refused session")
	}
	got := scrapeAll(t, metricsURL(t, s))
	if got["codex_exec_server_sessions_refused_total"] != 2 || got[`codex_exec_server_sessions{state="attached"}`] != 2 {
		t.Errorf("sessions_refused_total %v, attached %v; want 2, 2", got["codex_exec_server_sessions_refused_total"], got[`codex_exec_server_sessions{state="attached"}`])
	}
}

// TestMaxSessionsEvictsEmptyDetached: at the session limit a new session
// takes the place of the one detached longest among those that never ran
// a process (a client that connects, initializes and leaves, again and
// again, used to fill the server for the session TTL); that id is then
// unknown to a resume. A session that ran a process, or is attached, is
// never taken.
func TestMaxSessionsEvictsEmptyDetached(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--max-sessions", "3", "--session-ttl", "60s")
	busy := dial(t, s.URL, nil)
	busySid := busy.handshake()
	busy.ok("process/start", startParams("p", "/bin/sleep", "60"), nil)
	busy.close()
	attached := dial(t, s.URL, nil)
	attached.handshake()
	old := dial(t, s.URL, nil)
	oldSid := old.handshake()
	old.close()
	newer, newerSid := initializeOnceDetached(t, s.URL) // takes old's place
	newer.close()
	fresh, _ := initializeOnceDetached(t, s.URL) // takes newer's
	defer fresh.close()
	var res struct {
		SessionID string `json:"sessionId"`
	}
	for _, sid := range []string{oldSid, newerSid} {
		c := dial(t, s.URL, nil)
		c.fail("initialize", map[string]any{"clientName": "e2e", "resumeSessionId": sid}, -32600, "unknown session id "+sid)
		c.close()
	}
	// Left: busy (detached, ran a process), attached, fresh: nothing to take.
	dial(t, s.URL, nil).fail("initialize", map[string]any{"clientName": "e2e"}, -32011, "server at its session limit (3 sessions)*")
	c := dial(t, s.URL, nil)
	c.ok("initialize", map[string]any{"clientName": "e2e", "resumeSessionId": busySid}, &res)
	if res.SessionID != busySid {
		t.Errorf("resume of the busy session: %q, want %q", res.SessionID, busySid)
	}
}

// TestMaxSessionsResumedNotEvicted: a session detached empty and then
// resumed is attached again, so a new session at the limit takes the place
// of another empty detached one and never the resumed one's.
func TestMaxSessionsResumedNotEvicted(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--max-sessions", "2", "--session-ttl", "60s")
	first := dial(t, s.URL, nil)
	firstSid := first.handshake()
	first.close()
	other := dial(t, s.URL, nil)
	otherSid := other.handshake()
	other.close()
	// Resume the session detached first (the next to be taken while detached).
	var back *client
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		back = dial(t, s.URL, nil)
		r := back.call("initialize", map[string]any{"clientName": "e2e", "resumeSessionId": firstSid})
		if r.Error == nil {
			break
		}
		back.close()
		if r.Error.Code != -32600 || time.Now().After(deadline) { // still attached: the close is on its way
			t.Fatalf("resume: %d %s", r.Error.Code, r.Error.Message)
		}
	}
	back.sendRaw(`{"method":"initialized","params":{}}`)
	defer back.close()
	fresh, _ := initializeOnceDetached(t, s.URL) // takes other's place, not first's
	defer fresh.close()
	c := dial(t, s.URL, nil)
	c.fail("initialize", map[string]any{"clientName": "e2e", "resumeSessionId": otherSid}, -32600, "unknown session id "+otherSid)
	c.close()
	back.ok("process/start", startParams("p", "/bin/true"), nil)
	dial(t, s.URL, nil).fail("initialize", map[string]any{"clientName": "e2e"}, -32011, "server at its session limit (2 sessions)*")
}

// initializeOnceDetached makes a new session on a server at its session
// limit, retrying -32011 until the connection closed last is detached
// (the server sees the close a moment later).
func initializeOnceDetached(t *testing.T, url string) (*client, string) {
	t.Helper()
	var res struct {
		SessionID string `json:"sessionId"`
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		c := dial(t, url, nil)
		r := c.call("initialize", map[string]any{"clientName": "e2e"})
		if r.Error == nil {
			if err := json.Unmarshal(r.Result, &res); err != nil {
				t.Fatal(err)
			}
			c.sendRaw(`{"method":"initialized","params":{}}`)
			return c, res.SessionID
		}
		c.close()
		if r.Error.Code != -32011 || time.Now().After(deadline) {
			t.Fatalf("initialize at the limit: %d %s", r.Error.Code, r.Error.Message)
		}
	}
}

// TestMaxSessionsTTLZeroFrees: with --session-ttl 0 a closed connection
// ends its session at once, so the place is free for the next client.
func TestMaxSessionsTTLZeroFrees(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--max-sessions", "1", "--session-ttl", "0")
	c1 := dial(t, s.URL, nil)
	c1.handshake()
	dial(t, s.URL, nil).fail("initialize", map[string]any{"clientName": "e2e"}, -32011, "*")
	c1.close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c := dial(t, s.URL, nil)
		r := c.call("initialize", map[string]any{"clientName": "e2e"})
		c.close()
		if r.Error == nil {
			break
		}
		if r.Error.Code != -32011 || time.Now().After(deadline) {
			t.Fatalf("after the only session ended: %d %s", r.Error.Code, r.Error.Message)
		}
	}
}

// TestFleetMetrics: /metrics carries codex_build_info (version, Go
// version, revision) and counts connections (open, total, refused by
// reason) and sessions by state.
func TestFleetMetrics(t *testing.T) {
	t.Parallel()
	tokenFile := t.TempDir() + "/token"
	if err := os.WriteFile(tokenFile, []byte("fleet-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, "--log-format", "json", "--metrics-listen", "127.0.0.1:0", "--session-ttl", "30s",
		"--max-connections", "2", "--ws-auth", "capability-token", "--ws-token-file", tokenFile)
	url := metricsURL(t, s)
	auth := map[string]string{"Authorization": "Bearer fleet-token"}
	c1 := dial(t, s.URL, auth)
	c1.handshake()
	c2 := dial(t, s.URL, auth)
	c2.handshake()
	if ws, code, _ := tryDial(t, s.URL); ws != nil || code != http.StatusUnauthorized {
		t.Fatalf("upgrade without a token: %d", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if ws, _, err := websocket.Dial(ctx, s.URL, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer fleet-token"}}}); err == nil {
		ws.CloseNow()
		t.Fatal("a third connection was accepted with --max-connections 2")
	}
	c2.close()
	waitMetricAll(t, url, `codex_exec_server_sessions{state="detached"}`, 1)
	waitMetricAll(t, url, `codex_exec_server_connections_open`, 1)
	got := scrapeAll(t, url)
	for name, want := range map[string]float64{
		`codex_exec_server_connections_open`:                             1,
		`codex_exec_server_connections_total`:                            2,
		`codex_exec_server_connections_refused_total{reason="auth"}`:     1,
		`codex_exec_server_connections_refused_total{reason="limit"}`:    1,
		`codex_exec_server_connections_refused_total{reason="peer"}`:     0,
		`codex_exec_server_connections_refused_total{reason="shutdown"}`: 0,
		`codex_exec_server_sessions{state="attached"}`:                   1,
		`codex_exec_server_sessions{state="detached"}`:                   1,
	} {
		if g, ok := got[name]; !ok || g != want {
			t.Errorf("%s = %v (present %v), want %v", name, g, ok, want)
		}
	}
	var info string
	for name, v := range got {
		if strings.HasPrefix(name, "codex_build_info{") && v == 1 {
			info = name
		}
	}
	ver, err := exec.Command(binary, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	version := strings.Fields(string(ver))[1]
	for _, want := range []string{`version="` + version + `"`, `goversion="` + runtime.Version() + `"`, `protocol="0.169.0"`, `revision="`} {
		if !strings.Contains(info, want) {
			t.Errorf("codex_build_info %q lacks %s", info, want)
		}
	}
}

// scrapeAll is scrape with labelled samples too, keyed by name{labels}.
func scrapeAll(t *testing.T, url string) map[string]float64 {
	t.Helper()
	code, body := get(t, url, nil)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d", url, code)
	}
	out := map[string]float64{}
	for _, l := range strings.Split(body, "\n") {
		i := strings.LastIndexByte(l, ' ')
		if i < 0 || strings.HasPrefix(l, "#") {
			continue
		}
		v, err := strconv.ParseFloat(l[i+1:], 64)
		if err != nil {
			t.Fatalf("sample %q: %v", l, err)
		}
		out[l[:i]] = v
	}
	return out
}

// waitMetricAll polls url until the sample name (labels included) is want.
func waitMetricAll(t *testing.T, url, name string, want float64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); scrapeAll(t, url)[name] != want; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never reached %v", name, want)
		}
	}
}
