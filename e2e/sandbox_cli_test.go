package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// sandboxCLI runs `codex sandbox ARGS` in dir and returns its combined
// output and exit code.
func sandboxCLI(t *testing.T, dir string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"sandbox"}, args...)...)
	cmd.Dir = dir
	cmd.Env = []string{raceEnv, "PATH=/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

func TestSandboxCLI(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(filepath.Dir(dir), "cli-outside-"+filepath.Base(dir))
	out, code := sandboxCLI(t, dir, "--mode", "workspace-write", "--exclude-tmp", "--", "sh", "-c", "echo ok > in.txt && echo x > "+outside)
	if code == 0 || !strings.Contains(out, "Read-only file system") {
		t.Fatalf("write outside: code %d out %q", code, out)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "in.txt")); string(b) != "ok\n" {
		t.Fatalf("write inside: %q", b)
	}
	if _, err := os.Stat(outside); err == nil {
		t.Fatalf("%s was created", outside)
	}
	for _, want := range []int{0, 1, 44} {
		if _, code := sandboxCLI(t, dir, "--", "sh", "-c", "exit "+itoa(want)); code != want {
			t.Fatalf("exit %d reported as %d", want, code)
		}
	}
	if _, code := sandboxCLI(t, dir, "--", "sh", "-c", "kill -TERM $$"); code != 143 {
		t.Fatalf("signal death reported as %d, want 143", code)
	}
	out, code = sandboxCLI(t, dir, "--profile-json", `{"type":"managed","file_system":{"type":"restricted","entries":[{"path":{"type":"special","value":{"kind":"root"}},"access":"read"},{"path":{"type":"glob_pattern","pattern":"*.env"},"access":"write"}]},"network":"restricted"}`, "--", "true")
	if code == 0 || !strings.Contains(out, "glob file system permissions only support deny-read entries") {
		t.Fatalf("contradictory profile: code %d out %q", code, out)
	}
	out, code = sandboxCLI(t, dir, "--policy-json", `{"type":"readOnly","access":{"type":"restricted"}}`, "--", "true")
	if code == 0 || !strings.Contains(out, "readOnly.access is no longer supported") {
		t.Fatalf("rejected legacy policy: code %d out %q", code, out)
	}
}
