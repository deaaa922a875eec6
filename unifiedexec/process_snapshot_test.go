package unifiedexec_test

import (
	"testing"
	"time"

	"github.com/codexec/codex/unifiedexec"
)

// TestSnapshotAndWaitExit: a yield window returns early on exit, and
// otherwise at its deadline with what arrived so far; WaitExit returns at
// the exit while a background descendant still holds stdout.
func TestSnapshotAndWaitExit(t *testing.T) {
	ctx, c := supervised(t)

	p, err := c.Start(ctx, unifiedexec.StartOptions{Argv: []string{"/bin/sh", "-c", "echo a; read x; echo b"}, PipeStdin: true})
	if err != nil {
		t.Fatal(err)
	}
	// Wait for the first line, then a short window: still running.
	deadline := time.Now().Add(10 * time.Second)
	for string(p.Current().Stdout) != "a\n" && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	s, err := p.Snapshot(ctx, 50*time.Millisecond)
	if err != nil || s.Exited || string(s.Stdout) != "a\n" {
		t.Fatalf("short window: %+v %v", s, err)
	}
	if err := p.Write(ctx, []byte("go\n")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	s, err = p.Snapshot(ctx, 20*time.Second)
	if err != nil || !s.Exited || string(s.Stdout) != "a\nb\n" || time.Since(start) > 10*time.Second {
		t.Fatalf("window ended by the exit: %+v %v after %v", s, err, time.Since(start))
	}

	p, err = c.Start(ctx, unifiedexec.StartOptions{Argv: []string{"/bin/sh", "-c", "sleep 0.5 & exit 3"}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := p.WaitExit(ctx)
	if err != nil || st.Code != 3 {
		t.Fatalf("WaitExit: %+v %v", st, err)
	}
	if _, err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}
