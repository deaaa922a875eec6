package metrics

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestNilMetrics: every recording method is a no-op on nil.
func TestNilMetrics(t *testing.T) {
	var m *Metrics
	m.ProcessStarted(time.Millisecond)
	m.ProcessClosed()
	m.StartFailed()
	m.Output(3)
	m.SandboxDenied()
	m.SessionCreated()
	m.SessionDetached()
	m.SessionResumed()
	m.SessionEnded(true)
	m.AuthFailed()
	m.ConnOpened()
	m.ConnClosed()
	m.ConnRefused("limit")
	m.SessionRefused()
	m.SetBuild("v", "p")
	if _, err := m.Listen("127.0.0.1:0", nil); err == nil {
		t.Error("Listen on nil Metrics succeeded")
	}
}

// TestServe: the recorded values come back in the text format on
// /metrics, with the Go collector's; other paths are 404; Close stops
// the goroutine (goleak).
func TestServe(t *testing.T) {
	m := New()
	m.ProcessStarted(3 * time.Millisecond)
	m.ProcessStarted(time.Millisecond)
	m.ProcessClosed()
	m.Output(1000)
	m.SessionCreated()
	m.SessionDetached()
	m.SessionResumed()
	m.SessionCreated()
	m.SessionDetached()
	m.SessionCreated()
	m.SessionEnded(false)
	m.AuthFailed()
	m.ConnOpened()
	m.ConnOpened()
	m.ConnClosed()
	m.ConnRefused("limit")
	m.SessionRefused()
	m.SetBuild("1.2.3", "0.169.0")
	m.ProxyDecision(true, "allow", "baseline_policy")
	m.ProxyDecision(false, "not_allowed", "decider")
	m.ProxyDecision(false, "not_allowed", "decider")
	s, err := m.Listen("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}()
	body := get(t, "http://"+s.Addr().String()+"/metrics", http.StatusOK)
	for _, want := range []string{
		"codex_exec_server_processes_started_total 2\n",
		"codex_exec_server_processes_live 1\n",
		"codex_exec_server_process_start_seconds_count 2\n",
		"codex_exec_server_output_bytes_total 1000\n",
		"codex_exec_server_sessions_live 2\n",
		"codex_exec_server_sessions_detached 1\n",
		`codex_exec_server_sessions{state="attached"} 1` + "\n",
		`codex_exec_server_sessions{state="detached"} 1` + "\n",
		"codex_exec_server_connections_open 1\n",
		"codex_exec_server_sessions_refused_total 1\n",
		"codex_exec_server_connections_total 2\n",
		`codex_exec_server_connections_refused_total{reason="limit"} 1` + "\n",
		`codex_exec_server_connections_refused_total{reason="peer"} 0` + "\n",
		`codex_build_info{goversion="` + runtime.Version() + `",protocol="0.169.0",revision="`,
		`",version="1.2.3"} 1` + "\n",
		"codex_exec_server_sessions_resumed_total 1\n",
		"codex_exec_server_auth_failures_total 1\n",
		"codex_exec_server_sandbox_denials_total 0\n",
		`codex_exec_server_network_proxy_decisions_total{decision="allow",reason="allow",source="baseline_policy"} 1` + "\n",
		`codex_exec_server_network_proxy_decisions_total{decision="deny",reason="not_allowed",source="decider"} 2` + "\n",
		"go_goroutines ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	get(t, "http://"+s.Addr().String()+"/", http.StatusNotFound)
}

func get(t *testing.T, url string, want int) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != want {
		t.Fatalf("GET %s: %d, want %d", url, resp.StatusCode, want)
	}
	return string(b)
}

// TestServeWrapped: the wrapper sees every request, /metrics included,
// and can refuse it.
func TestServeWrapped(t *testing.T) {
	var seen atomic.Int32
	refuse := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			seen.Add(1)
			if r.URL.Path == "/metrics" {
				http.Error(w, "no", http.StatusForbidden)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	s, err := New().Listen("127.0.0.1:0", refuse)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	get(t, "http://"+s.Addr().String()+"/metrics", http.StatusForbidden)
	get(t, "http://"+s.Addr().String()+"/", http.StatusNotFound)
	if n := seen.Load(); n != 2 {
		t.Errorf("the wrapper saw %d requests, want 2", n)
	}
}

// A kept-alive connection that sends nothing more is closed after the
// idle timeout; one that was just answered is not closed at once.
func TestServeClosesIdleConnections(t *testing.T) {
	defer func(d time.Duration) { idleTimeout = d }(idleTimeout)
	idleTimeout = 200 * time.Millisecond
	srv, err := New().Listen("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	start := time.Now()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("the idle connection: %v, want EOF (closed by the server)", err)
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Errorf("closed after %v, before the idle timeout", d)
	}
}
