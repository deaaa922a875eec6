package execserver

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wire"
)

var unsandboxedPolicy = map[string]any{"type": "dangerFullAccess"}

// TestCommandExecInProcess runs the family in process, so that goleak
// checks that every goroutine of a run ends with it.
func TestCommandExecInProcess(t *testing.T) {
	srv := newTestServer(t, SessionConfig{BaseEnv: []string{"PATH=/usr/bin:/bin", "KEEP=1", "DROP=1"}})
	tc := srv.dial(t)
	var res wire.CommandExecResult
	tc.call(wire.MethodCommandExec, map[string]any{
		"command": []string{"/bin/sh", "-c", `printf "$KEEP${DROP-unset}$NEW"; printf e >&2; exit 7`},
		"env":     map[string]any{"DROP": nil, "NEW": "n"}, "sandboxPolicy": unsandboxedPolicy,
	}, &res)
	if res != (wire.CommandExecResult{ExitCode: 7, Stdout: "1unsetn", Stderr: "e"}) {
		t.Fatalf("got %+v", res)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := tc.c.Call(ctx, wire.MethodCommandExecTerminate, map[string]any{"processId": "nope"}, nil)
	var re *rpc.Error
	if !errors.As(err, &re) || re.Code != rpc.CodeInvalidRequest || re.Message != `no active command/exec for process id "nope"` {
		t.Fatalf("terminate of an unknown id: %v", err)
	}
}

// TestCommandExecConnectionCloseKills: closing the connection kills its
// commands, named or not, and ends every goroutine of theirs.
func TestCommandExecConnectionCloseKills(t *testing.T) {
	srv := newTestServer(t, SessionConfig{BaseEnv: []string{"PATH=/usr/bin:/bin"}})
	tc := srv.dial(t)
	dir := t.TempDir()
	for i, named := range []bool{true, false} {
		p := map[string]any{"command": []string{"/bin/sh", "-c", "echo $$ > " + dir + "/" + strconv.Itoa(i) + "; exec sleep 60"}, "sandboxPolicy": unsandboxedPolicy, "disableTimeout": true}
		if named {
			p["processId"] = "named"
		}
		go func() { _ = tc.c.Call(context.Background(), wire.MethodCommandExec, p, nil) }()
	}
	var pids []int
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; i < 2; i++ {
		for {
			b, _ := os.ReadFile(dir + "/" + strconv.Itoa(i))
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				pids = append(pids, pid)
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("commands did not start")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	tc.close()
	tc.srv.Wait() // every run goroutine of the connection has returned
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("pid %d survived the connection", pid)
		}
	}
}
