package e2e

import (
	"os/exec"
	"strings"
	"testing"
)

// TestExecRunTTY runs `codex exec run --tty` inside a terminal made by
// script(1): the command gets a PTY of its own, and the exit code comes
// back.
func TestExecRunTTY(t *testing.T) {
	script, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) is not installed")
	}
	cmd := exec.Command(script, "-qec", binary+" exec run --tty -- sh -c 'tty; stty size; exit 3'", "/dev/null")
	cmd.Env = []string{raceEnv, "PATH=/usr/bin:/bin", "TERM=dumb"}
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 3 {
		t.Fatalf("exit: %v, output %q", err, out)
	}
	if !strings.Contains(string(out), "/dev/pts/") {
		t.Fatalf("output %q", out)
	}
}
