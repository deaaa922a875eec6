package execserver

import (
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/codexec/codex/metrics"
)

// samples scrapes m and returns its unlabelled samples by name.
func samples(t *testing.T, m *metrics.Metrics) map[string]float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	out := map[string]float64{}
	for _, l := range strings.Split(rec.Body.String(), "\n") {
		name, val, ok := strings.Cut(l, " ")
		if !ok || strings.HasPrefix(l, "#") || strings.Contains(name, "{") {
			continue
		}
		v, err := strconv.ParseFloat(val, 64)
		if err != nil {
			t.Fatalf("sample %q: %v", l, err)
		}
		out[strings.TrimPrefix(name, "codex_exec_server_")] = v
	}
	return out
}

// The live gauges come back to zero whichever way sessions and processes
// end: a process that exits, one killed at its session's expiry, one
// killed at shutdown.
func TestMetricsGaugesBalance(t *testing.T) {
	m := metrics.New()
	s := newTestServer(t, SessionConfig{SessionTTL: 50 * time.Millisecond, Metrics: m})
	a := s.dial(t)
	a.call("process/start", startParams("x", "printf hi"), nil)
	if code, _ := a.waitExited("x"); code != 0 {
		t.Fatalf("exit %d", code)
	}
	escapee(a, "expires")
	a.close()
	deadline := time.Now().Add(10 * time.Second)
	for got := samples(t, m); got["sessions_live"] != 0 || got["processes_live"] != 0; got = samples(t, m) {
		if time.Now().After(deadline) {
			t.Fatalf("after the expiry: sessions_live %v processes_live %v, want 0", got["sessions_live"], got["processes_live"])
		}
		time.Sleep(10 * time.Millisecond)
	}
	b := s.dial(t)
	escapee(b, "shutdown")
	got := samples(t, m)
	if got["processes_live"] != 1 || got["sessions_live"] != 1 {
		t.Errorf("before shutdown: processes_live %v sessions_live %v, want 1 and 1", got["processes_live"], got["sessions_live"])
	}
	s.shutdownNow(t)
	got = samples(t, m)
	for name, want := range map[string]float64{
		"processes_started_total": 3, "processes_live": 0, "process_start_seconds_count": 3,
		"sessions_live": 0, "sessions_detached": 0, "sessions_resumed_total": 0,
	} {
		if got[name] != want {
			t.Errorf("%s = %v, want %v", name, got[name], want)
		}
	}
	if got["output_bytes_total"] < 2 {
		t.Errorf("output_bytes_total %v, want at least 2", got["output_bytes_total"])
	}
}
