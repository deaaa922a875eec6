package execserver

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
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

// TestCommandExecWriteParks: writes beyond the stdin queue wait for the
// child without holding up the connection's other requests.
func TestCommandExecWriteParks(t *testing.T) {
	srv := newTestServer(t, SessionConfig{BaseEnv: []string{"PATH=/usr/bin:/bin"}})
	tc := srv.dial(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	var res wire.CommandExecResult
	go func() {
		done <- tc.c.Call(ctx, wire.MethodCommandExec, map[string]any{
			"command": []string{"/bin/sh", "-c", "sleep 3; wc -c"}, "processId": "w", "streamStdin": true, "sandboxPolicy": unsandboxedPolicy,
		}, &res)
	}()
	chunk := base64.StdEncoding.EncodeToString(make([]byte, 512<<10))
	writes := make(chan error, 4)
	for i := 0; i < 4; i++ {
		// Sent in order by one goroutine, so that the first finds the id.
		err := error(nil)
		if i == 0 {
			for start := time.Now(); time.Since(start) < 5*time.Second; time.Sleep(10 * time.Millisecond) {
				if err = tc.c.Call(ctx, wire.MethodCommandExecWrite, map[string]any{"processId": "w", "deltaBase64": chunk}, nil); err == nil {
					break
				}
			}
			writes <- err
			continue
		}
		go func() {
			writes <- tc.c.Call(ctx, wire.MethodCommandExecWrite, map[string]any{"processId": "w", "deltaBase64": chunk}, nil)
		}()
	}
	start := time.Now()
	var quick wire.CommandExecResult
	tc.call(wire.MethodCommandExec, map[string]any{"command": []string{"/bin/echo", "-n", "quick"}, "sandboxPolicy": unsandboxedPolicy}, &quick)
	if quick.Stdout != "quick" || time.Since(start) > 2*time.Second {
		t.Fatalf("a command/exec behind parked writes: %+v after %v", quick, time.Since(start))
	}
	for i := 0; i < 4; i++ {
		if err := <-writes; err != nil {
			t.Fatalf("write: %v", err)
		}
	}
	tc.call(wire.MethodCommandExecWrite, map[string]any{"processId": "w", "closeStdin": true}, nil)
	if err := <-done; err != nil || res.ExitCode != 0 || strings.TrimSpace(res.Stdout) != "2097152" {
		t.Fatalf("got %+v, %v", res, err)
	}
}

// TestCommandExecDeltaSize: streamed output comes in deltas of at most
// 64 KiB, capped per stream, the last one flagged.
func TestCommandExecDeltaSize(t *testing.T) {
	srv := newTestServer(t, SessionConfig{BaseEnv: []string{"PATH=/usr/bin:/bin"}})
	tc := srv.dial(t)
	var res wire.CommandExecResult
	tc.call(wire.MethodCommandExec, map[string]any{
		"command": []string{"/bin/sh", "-c", "head -c 1000000 /dev/zero"}, "processId": "big", "streamStdoutStderr": true,
		"outputBytesCap": 300000, "sandboxPolicy": unsandboxedPolicy,
	}, &res)
	if res != (wire.CommandExecResult{}) {
		t.Fatalf("result %+v", res)
	}
	deltas := tc.deltas("big")
	total := 0
	for i, d := range deltas {
		if len(d.data) > 64<<10 || d.capReached != (i == len(deltas)-1) {
			t.Fatalf("delta %d: %d bytes, capReached %v", i, len(d.data), d.capReached)
		}
		total += len(d.data)
	}
	if total != 300000 {
		t.Fatalf("%d bytes streamed", total)
	}
}

// TestCommandExecSmallWritesCoalesced: a burst of many one-byte writes
// (dd bs=1) is streamed in fewer deltas than writes, the bytes exact. How
// many reads a delta gathers depends on how far the child runs ahead of the
// sender, which the scheduler decides; TestCommandExecOutputCoalescesQueuedReads
// checks the merging itself deterministically.
func TestCommandExecSmallWritesCoalesced(t *testing.T) {
	srv := newTestServer(t, SessionConfig{BaseEnv: []string{"PATH=/usr/bin:/bin"}})
	tc := srv.dial(t)
	var want strings.Builder
	for i := 0; want.Len() < 20000; i++ {
		want.WriteString(fmt.Sprintf("%05d\n", i))
	}
	src := t.TempDir() + "/burst"
	if err := os.WriteFile(src, []byte(want.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var res wire.CommandExecResult
	tc.call(wire.MethodCommandExec, map[string]any{
		"command":   []string{"dd", "if=" + src, "bs=1", "status=none"},
		"processId": "burst", "streamStdoutStderr": true, "outputBytesCap": want.Len(), "sandboxPolicy": unsandboxedPolicy,
	}, &res)
	if res != (wire.CommandExecResult{}) {
		t.Fatalf("result %+v", res)
	}
	deltas := tc.deltas("burst")
	var got strings.Builder
	for _, d := range deltas {
		got.Write(d.data)
	}
	if got.String() != want.String() {
		t.Fatalf("streamed %d bytes, want %d exactly", got.Len(), want.Len())
	}
	t.Logf("%d writes in %d deltas", want.Len(), len(deltas))
	if len(deltas) > want.Len()/2 {
		t.Fatalf("%d writes in %d deltas: small reads were not coalesced", want.Len(), len(deltas))
	}
}
