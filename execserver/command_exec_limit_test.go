package execserver

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wire"
)

// TestCommandExecCountsAgainstMaxProcesses: command/exec runs are live
// processes of the session like process/start ones (--max-processes,
// docs/operations.md §1): with a limit of 2, two running commands make a
// third command/exec and a process/start refused, and the end of one makes
// room again. command/exec counted nothing: with --max-processes 10 a
// client ran 300 sleeps at once, as many as it asked for.
func TestCommandExecCountsAgainstMaxProcesses(t *testing.T) {
	srv := newTestServer(t, SessionConfig{MaxProcesses: 2, BaseEnv: []string{"PATH=/usr/bin:/bin"}})
	tc := srv.dial(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	run := func(id string) *rpc.Pending {
		t.Helper()
		p, err := tc.c.Start(ctx, wire.MethodCommandExec, map[string]any{"command": []string{"sleep", "60"}, "processId": id, "sandboxPolicy": unsandboxedPolicy, "disableTimeout": true})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b := run("a"), run("b")
	// Both run once they answer command/exec/write (an unknown id fails
	// with another error).
	for _, id := range []string{"a", "b"} {
		deadline := time.Now().Add(10 * time.Second)
		for {
			err := tc.c.Call(ctx, wire.MethodCommandExecResize, map[string]any{"processId": id, "size": map[string]int{"rows": 10, "cols": 10}}, nil)
			var re *rpc.Error
			if errors.As(err, &re) && re.Message != fmt.Sprintf("no active command/exec for process id %q", id) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("command/exec %s did not start: %v", id, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	want := "too many processes in this session (limit 2)"
	err := run("c").Await(ctx, nil)
	var re *rpc.Error
	if !errors.As(err, &re) || re.Message != want {
		t.Fatalf("a third command/exec beside two running ones: %v, want %q", err, want)
	}
	err = tc.c.Call(ctx, "process/start", startParams("p", "exec sleep 60"), nil)
	if !errors.As(err, &re) || re.Message != want {
		t.Fatalf("a process/start beside two running commands: %v, want %q", err, want)
	}
	tc.call(wire.MethodCommandExecTerminate, map[string]any{"processId": "a"}, nil)
	if err := a.Await(ctx, nil); err != nil {
		t.Fatalf("command/exec a: %v", err)
	}
	tc.call("process/start", startParams("p", "exec sleep 60"), nil)
	tc.call(wire.MethodCommandExecTerminate, map[string]any{"processId": "b"}, nil)
	if err := b.Await(ctx, nil); err != nil {
		t.Fatalf("command/exec b: %v", err)
	}
}
