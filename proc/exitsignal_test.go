package proc_test

import (
	"syscall"
	"testing"

	"github.com/codexec/codex/proc"
)

// TestExitSignal: a child killed by a signal reports it beside its 128+N
// exit code; one that exits with 137 by itself reports none.
func TestExitSignal(t *testing.T) {
	t.Parallel()
	p, _ := start(t, helper("sleep"), proc.Options{})
	if got := p.ExitSignal(); got != 0 {
		t.Errorf("ExitSignal before the exit: %v", got)
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if code := finish(t, p); code != 137 || p.ExitSignal() != syscall.SIGKILL {
		t.Errorf("killed: code %d, signal %v; want 137, SIGKILL", code, p.ExitSignal())
	}
	p, _ = start(t, helper("exit", "137"), proc.Options{})
	if code := finish(t, p); code != 137 || p.ExitSignal() != 0 {
		t.Errorf("exit 137: code %d, signal %v; want 137, none", code, p.ExitSignal())
	}
}
