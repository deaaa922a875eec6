package execserver

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codexec/codex/proc"
	"github.com/codexec/codex/sandbox"
	"github.com/codexec/codex/wire"
	"go.uber.org/zap"
)

// shutdownOnce shuts s down now (the cleanup of newTestServer then finds
// nothing left), so that every watcher has returned.
func (s *testServer) shutdownNow(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.reg.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

// A process that writes a burst and exits at once while a background
// descendant keeps stdout open and writes forever: process/exited comes
// promptly (closed never would), after every byte written before the exit,
// also while other processes of the session take the output credits, so
// that the burst's reader is behind when the exit comes.
// The connection's close (session TTL 0) then kills the descendant.
func TestExitedFollowsPreExitOutput(t *testing.T) {
	s := newTestServer(t, SessionConfig{SessionTTL: -1})
	const n = 100_000
	for i := 0; i < 8; i++ {
		tc := s.dial(t)
		if i < 2 { // the old 1 ms wait failed these at once
			for _, hog := range []string{"hog1", "hog2", "hog3", "hog4"} {
				tc.call("process/start", startParams(hog, "cat /dev/zero"), nil)
			}
		}
		tc.call("process/start", startParams("burst", `(while :; do echo tick; done) & head -c 100000 /dev/zero | tr '\0' x; echo END`), nil)
		t0 := time.Now()
		code, out := tc.waitExited("burst")
		t1 := time.Now()
		if got := strings.Count(out, "x"); code != 0 || got != n || !strings.Contains(out, "END") {
			t.Fatalf("run %d: exit %d with %d of %d x before it, END seen: %v", i, code, got, n, strings.Contains(out, "END"))
		}
		tc.close()
		t.Logf("exited after %v, closed in %v", t1.Sub(t0), time.Since(t1))
	}
}

// escapee starts a shell that leaves a setsid'd sleep behind, prints its
// pid and becomes a sleep that ignores SIGTERM; it returns that pid.
func escapee(tc *testClient, id string) int {
	tc.t.Helper()
	tc.call("process/start", startParams(id, `trap '' TERM; setsid sleep 1000 >/dev/null 2>&1 & echo pid=$!; exec sleep 1000`), nil)
	return tc.waitPid(id)
}

// Every way a process ends through the server kills its tree and logs the
// cause exactly once; a process that exits by itself logs none.
func TestEndCausesLoggedOnce(t *testing.T) {
	cases := []struct {
		name string
		ttl  time.Duration
		end  func(t *testing.T, s *testServer, tc *testClient)
		want error
	}{
		{"terminate escalated", 0, func(t *testing.T, s *testServer, tc *testClient) {
			// Graceful with a long grace, then force: killed at once.
			tc.call("process/terminate", map[string]any{"processId": "p", "mode": map[string]any{"type": "graceful", "timeoutMs": 600000}}, nil)
			tc.call("process/terminate", map[string]any{"processId": "p"}, nil)
			if code, _ := tc.waitExited("p"); code != 137 {
				t.Errorf("exit %d after the escalation, want 137", code)
			}
		}, &gracefulTerminate{}},
		{"session expired", 50 * time.Millisecond, func(t *testing.T, s *testServer, tc *testClient) { tc.close() }, errSessionExpired},
		{"connection closed", -1, func(t *testing.T, s *testServer, tc *testClient) { tc.close() }, errConnClosed},
		{"shutdown", 0, func(t *testing.T, s *testServer, tc *testClient) { s.shutdownNow(t) }, errShutdown},
		{"session/end", 0, func(t *testing.T, s *testServer, tc *testClient) { tc.call("session/end", nil, nil) }, errSessionEnded},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newTestServer(t, SessionConfig{SessionTTL: c.ttl})
			tc := s.dial(t)
			tc.call("process/start", startParams("self", "echo done"), nil)
			if code, _ := tc.waitExited("self"); code != 0 {
				t.Fatalf("exit %d", code)
			}
			pid := escapee(tc, "p")
			c.end(t, s, tc)
			waitGone(t, pid)
			s.shutdownNow(t)
			if got := s.causes("p"); !slices.Equal(got, []string{c.want.Error()}) {
				t.Errorf("causes logged %q, want [%q]", got, c.want.Error())
			}
			if got := s.causes("self"); len(got) != 0 {
				t.Errorf("a process that exited by itself logged %q", got)
			}
		})
	}
}

// Terminates sent with their starts on a connection that runs requests
// concurrently meet the start in flight (terminated while starting), the
// running process, or no process yet (then a second terminate follows):
// every process dies and logs one cause.
func TestTerminateWhileStarting(t *testing.T) {
	s := newTestServer(t, SessionConfig{})
	tc := s.dialConc(t, 2)
	marker := fmt.Sprintf("1000.%09d", rand.IntN(1e9))
	ids := make([]string, 12)
	for i := range ids {
		ids[i] = fmt.Sprintf("p%d", i)
		var wg sync.WaitGroup
		var startErr error
		var term wire.TerminateResult
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		wg.Add(2)
		go func() {
			defer wg.Done()
			startErr = tc.c.Call(ctx, "process/start", map[string]any{"processId": ids[i], "argv": []string{"/bin/sleep", marker}, "cwd": "/", "env": map[string]string{}, "tty": false}, nil)
		}()
		go func() {
			defer wg.Done()
			_ = tc.c.Call(ctx, "process/terminate", map[string]any{"processId": ids[i]}, &term)
		}()
		wg.Wait()
		cancel()
		switch {
		case startErr != nil && !strings.Contains(startErr.Error(), "start was cancelled"):
			t.Fatalf("start %s: %v", ids[i], startErr)
		case startErr == nil && !term.Running:
			tc.call("process/terminate", map[string]any{"processId": ids[i]}, nil) // it ran first
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for markedLeft(marker) {
		if time.Now().After(deadline) {
			t.Fatalf("processes running %s left", marker)
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.shutdownNow(t)
	whileStarting := 0
	for _, id := range ids {
		got := s.causes(id)
		if len(got) != 1 || (got[0] != errTerminated.Error() && got[0] != errStartCancelled.Error()) {
			t.Errorf("%s: causes %q", id, got)
		}
		if len(got) == 1 && got[0] == errStartCancelled.Error() {
			whileStarting++
		}
	}
	t.Logf("%d of %d terminated while starting", whileStarting, len(ids))
}

// markedLeft reports whether a running process has marker in its command line.
func markedLeft(marker string) bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), marker) {
			st, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
			if !strings.Contains(string(st), ") Z ") {
				return true
			}
		}
	}
	return false
}

// workspaceWrite is the sandbox object of a workspace-write turn rooted at
// root: the rest of the file system is read-only.
func workspaceWrite(root string) map[string]any {
	special := func(kind string) map[string]any {
		return map[string]any{"type": "special", "value": map[string]any{"kind": kind}}
	}
	return map[string]any{
		"permissions": map[string]any{
			"type": "managed",
			"file_system": map[string]any{"type": "restricted", "entries": []any{
				map[string]any{"path": special("root"), "access": "read"},
				map[string]any{"path": special("project_roots"), "access": "write"},
			}},
			"network": "restricted",
		},
		"cwd":            "file://" + root,
		"workspaceRoots": []string{"file://" + root},
	}
}

// The denial of a sandboxed process is judged on all it wrote before its
// exit, even when that is a burst ending with the denial and other
// processes of the session take the output credits, so the reader is
// behind when the exit comes: exited says sandboxDenied and follows the
// whole output. The old 20 ms wait judged a prefix.
func TestSandboxDenialJudgedOnWholeOutput(t *testing.T) {
	if err := sandbox.Available(); err != nil {
		t.Skipf("no sandbox here: %v", err)
	}
	s := newTestServer(t, SessionConfig{SessionTTL: -1})
	tc := s.dial(t)
	for _, hog := range []string{"hog1", "hog2", "hog3", "hog4"} {
		tc.call("process/start", startParams(hog, "cat /dev/zero"), nil)
	}
	root := t.TempDir()
	const n = 300_000
	p := startParams("deny", fmt.Sprintf(`head -c %d /dev/zero | tr '\0' x >&2; echo x > /denied-%d`, n, rand.IntN(1e9)))
	p["cwd"], p["sandbox"] = root, workspaceWrite(root)
	tc.call("process/start", p, nil)
	tc.waitFor("deny exited", func() bool { _, ok := tc.exit["deny"]; return ok })
	tc.mu.Lock()
	code, denied, out := tc.exit["deny"], tc.denied["deny"], tc.out["deny"].String()
	tc.mu.Unlock()
	if code == 0 || !denied || strings.Count(out, "x") < n || !strings.Contains(out, "Read-only file system") {
		t.Fatalf("exit %d, sandboxDenied %v, %d x and the denial %v before exited", code, denied, strings.Count(out, "x"), strings.Contains(out, "Read-only file system"))
	}
}

// When a graceful terminate and a forced one both reach the watcher before
// it runs, the graceful one is its first cause (logged), and the forced one
// then kills at once. The watcher's select picks at random among ready
// cases, so 20 rounds all but always catch a watcher that takes the later
// cause first.
func TestFirstCauseActedOnFirst(t *testing.T) {
	for i := 0; i < 20; i++ {
		// It ignores SIGTERM, so only the kill ends it.
		ready := make(chan struct{}, 1)
		out := func(proc.Stream, []byte) {
			select {
			case ready <- struct{}{}:
			default:
			}
		}
		p, err := proc.Start(proc.Spec{Argv: []string{"/bin/sh", "-c", "trap '' TERM; echo ready; exec sleep 1000"}, Dir: "/"}, out, proc.Options{})
		if err != nil {
			t.Fatal(err)
		}
		<-ready
		sessCtx, sessCancel := context.WithCancelCause(context.Background())
		ctx, cancel := context.WithCancelCause(sessCtx)
		e := &entry{id: "p", sess: &Session{log: zap.NewNop(), ctx: sessCtx}, ctx: ctx, cancel: cancel, later: newMailbox()}
		e.stop(&gracefulTerminate{grace: time.Hour})
		e.stop(errTerminated)
		w := &watcher{e: e, p: p, first: e.ctx.Done()}
		w.until(p.ExitFlushed())
		w.stopGrace()
		p.Close()
		sessCancel(nil)
		var g *gracefulTerminate
		if !errors.As(w.cause, &g) || !w.killed || p.ExitCode() != 137 {
			t.Fatalf("round %d: cause %v, killed %v, exit %d; want the graceful terminate, then killed (137)", i, w.cause, w.killed, p.ExitCode())
		}
	}
}
