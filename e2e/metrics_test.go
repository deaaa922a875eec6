package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// metricsURL returns the /metrics URL the server logged at start.
func metricsURL(t *testing.T, s *server) string {
	t.Helper()
	s.waitStderr(`"serving metrics"`, 5*time.Second)
	l := one(t, jsonLogs(t, s.stderr.String()), "serving metrics", nil)
	u, _ := l["url"].(string)
	if !strings.HasPrefix(u, "http://127.0.0.1:") || !strings.HasSuffix(u, "/metrics") {
		t.Fatalf("metrics url %q", u)
	}
	return u
}

// scrape fetches url and returns the value of every unlabelled sample of
// the text format, by metric name.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	code, body := get(t, url, nil)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d", url, code)
	}
	out := map[string]float64{}
	for _, l := range strings.Split(body, "\n") {
		name, val, ok := strings.Cut(l, " ")
		if !ok || strings.HasPrefix(l, "#") || strings.Contains(name, "{") {
			continue
		}
		v, err := strconv.ParseFloat(val, 64)
		if err != nil {
			t.Fatalf("sample %q: %v", l, err)
		}
		out[name] = v
	}
	return out
}

// wantMetrics checks the named values of got.
func wantMetrics(t *testing.T, got map[string]float64, want map[string]float64) {
	t.Helper()
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
}

// TestMetricsEndpoint: with --metrics-listen, /metrics counts the
// processes, their output and start latency, the sessions (live,
// detached, resumed) and the 401s, beside the Go runtime's metrics; the
// endpoint goes away with the server.
func TestMetricsEndpoint(t *testing.T) {
	t.Parallel()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("metrics-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, "--log-format", "json", "--metrics-listen", "127.0.0.1:0", "--session-ttl", "30s",
		"--ws-auth", "capability-token", "--ws-token-file", tokenFile)
	url := metricsURL(t, s)
	if code, _ := get(t, httpURL(s.URL)+"/", map[string]string{"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
		"Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Authorization": "Bearer wrong"}); code != 401 {
		t.Fatalf("bad token: %d, want 401", code)
	}
	auth := map[string]string{"Authorization": "Bearer metrics-token"}
	c := dial(t, s.URL, auth)
	sid := c.handshake()
	const runs, line = 3, "0123456789abcdef\n"
	for i := range runs {
		id := "m" + strconv.Itoa(i)
		if out, code := c.run(id, startParams(id, "/bin/sh", "-c", "printf '"+line+line+"'")); out != line+line || code != 0 {
			t.Fatalf("%s: %q exit %d", id, out, code)
		}
	}
	c.fail("process/start", startParams("bad", "/nonexistent/prog"), -32603, "*")
	m := scrape(t, url)
	wantMetrics(t, m, map[string]float64{
		"codex_exec_server_processes_started_total":      runs,
		"codex_exec_server_processes_live":               0,
		"codex_exec_server_process_start_seconds_count":  runs,
		"codex_exec_server_process_start_failures_total": 1,
		"codex_exec_server_auth_failures_total":          1,
		"codex_exec_server_sessions_live":                1,
		"codex_exec_server_sessions_detached":            0,
		"codex_exec_server_sessions_resumed_total":       0,
		"codex_exec_server_sandbox_denials_total":        0,
	})
	if got := m["codex_exec_server_output_bytes_total"]; got < runs*2*float64(len(line)) {
		t.Errorf("output_bytes_total %v, want at least %d", got, runs*2*len(line))
	}
	if m["go_goroutines"] <= 0 || m["process_resident_memory_bytes"] <= 0 {
		t.Errorf("runtime metrics missing: go_goroutines %v, process_resident_memory_bytes %v", m["go_goroutines"], m["process_resident_memory_bytes"])
	}

	c.close()
	waitMetric(t, url, "codex_exec_server_sessions_detached", 1)
	r := dial(t, s.URL, auth)
	r.ok("initialize", map[string]any{"clientName": "e2e", "resumeSessionId": sid}, nil)
	wantMetrics(t, scrape(t, url), map[string]float64{
		"codex_exec_server_sessions_live":          1,
		"codex_exec_server_sessions_detached":      0,
		"codex_exec_server_sessions_resumed_total": 1,
	})
	s.stop()
	if _, err := http.Get(url); err == nil {
		t.Error("/metrics still served after the server exited")
	}
}

// waitMetric polls url until name has value want.
func waitMetric(t *testing.T, url, name string, want float64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for scrape(t, url)[name] != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s never reached %v", name, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
