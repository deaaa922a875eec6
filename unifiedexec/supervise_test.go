package unifiedexec_test

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codexec/codex/unifiedexec"
)

func TestSuperviseCommunicate(t *testing.T) {
	t.Parallel()
	ctx, c := supervised(t)
	p, err := c.Start(ctx, unifiedexec.StartOptions{Argv: []string{"sh", "-c", "cat; echo e >&2; exit 3"}, PipeStdin: true})
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, st, err := p.Communicate(ctx, []byte("hello"))
	if err != nil || st.Code != 3 || string(out) != "hello" || string(errOut) != "e\n" {
		t.Fatalf("communicate: %q %q %+v %v", out, errOut, st, err)
	}
	if _, err := c.Start(ctx, unifiedexec.StartOptions{Argv: []string{"true"}, ProcessID: p.ID()}); err == nil {
		t.Fatal("reusing a retained process id succeeded")
	}
}

func TestSupervisorRestart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := unifiedexec.Supervise(ctx, unifiedexec.SuperviseOptions{Path: binary, Backoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, err := c.Start(ctx, unifiedexec.StartOptions{Argv: []string{"sleep", "3"}})
	if err != nil {
		t.Fatal(err)
	}
	pid := c.ServerPID()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, err = p.Wait(ctx)
	if !errors.Is(err, unifiedexec.ErrTransport) {
		t.Fatalf("Wait after the server died: %v, want ErrTransport", err)
	}
	t.Logf("running process ended with: %v", err)
	q, err := c.Start(ctx, unifiedexec.StartOptions{Argv: []string{"echo", "again"}})
	if err != nil {
		t.Fatalf("Start after restart: %v", err)
	}
	out, _, st, err := q.Communicate(ctx, nil)
	if err != nil || st.Code != 0 || string(out) != "again\n" {
		t.Fatalf("after restart: %q %+v %v", out, st, err)
	}
	if c.ServerPID() == pid {
		t.Fatal("server pid did not change")
	}
}

// A child that never comes up is retried MaxRestarts times, then the error
// says so.
func TestSuperviseStartRetries(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := unifiedexec.Supervise(ctx, unifiedexec.SuperviseOptions{Path: "/bin/false", MaxRestarts: 2, Backoff: time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "failed 3 times") {
		t.Fatalf("err = %v, want a failure after 3 attempts", err)
	}
}
