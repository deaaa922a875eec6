package execserver

import (
	"context"
	"testing"
	"time"

	"github.com/codexec/codex/metrics"
	"github.com/codexec/codex/wire"
)

// TestCommandExecCounted: command/exec runs count as processes and leave
// balanced gauges, whether they exit or die with their connection, and
// each logs one start and one end line with kind "command/exec".
func TestCommandExecCounted(t *testing.T) {
	m := metrics.New()
	srv := newTestServer(t, SessionConfig{BaseEnv: []string{"PATH=/usr/bin:/bin"}, Metrics: m})
	tc := srv.dial(t)
	var res wire.CommandExecResult
	tc.call(wire.MethodCommandExec, map[string]any{"command": []string{"/bin/sh", "-c", "printf abc; printf de >&2"}, "sandboxPolicy": unsandboxedPolicy}, &res)
	if res.Stdout != "abc" || res.Stderr != "de" {
		t.Fatalf("got %+v", res)
	}
	go func() {
		_ = tc.c.Call(context.Background(), wire.MethodCommandExec, map[string]any{
			"command": []string{"/bin/sleep", "60"}, "processId": "held", "disableTimeout": true, "sandboxPolicy": unsandboxedPolicy}, nil)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for samples(t, m)["processes_live"] != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the held run never counted as live")
		}
		time.Sleep(10 * time.Millisecond)
	}
	tc.close()
	tc.srv.Wait() // the run goroutines have returned
	got := samples(t, m)
	for name, want := range map[string]float64{"processes_started_total": 2, "processes_live": 0, "process_start_seconds_count": 2, "output_bytes_total": 5} {
		if got[name] != want {
			t.Errorf("%s = %v, want %v", name, got[name], want)
		}
	}
	started := srv.logs.FilterMessage("process started").FilterFieldKey("kind").All()
	ended := srv.logs.FilterMessage("process ended").FilterFieldKey("kind").All()
	if len(started) != 2 || len(ended) != 2 {
		t.Fatalf("%d started and %d ended lines, want 2 and 2", len(started), len(ended))
	}
	first, held := ended[0].ContextMap(), ended[1].ContextMap()
	if first["kind"] != kindCommandExec || first["processId"] != "" || first["bytes_out"] != int64(5) || first["cause"] != nil {
		t.Errorf("end of the first run: %v", first)
	}
	if held["processId"] != "held" || held["cause"] != execCauseConnClosed || held["signal"] != "SIGKILL" {
		t.Errorf("end of the held run: %v", held)
	}
}
