package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestInstallCopiesItself: `codex install --to DIR` copies the running
// executable to DIR/codex (creating DIR), executable, byte for byte, and
// prints the path; the copy runs.
func TestInstallCopiesItself(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "shared", "bin")
	out, err := exec.Command(binary, "install", "--to", dir).Output()
	if err != nil {
		t.Fatalf("install: %v", err)
	}
	dst := filepath.Join(dir, "codex")
	if strings.TrimSpace(string(out)) != dst {
		t.Errorf("install printed %q, want %q", out, dst)
	}
	want, _ := os.ReadFile(binary)
	got, err := os.ReadFile(dst)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the copy differs from the binary (%d bytes, want %d; %v)", len(got), len(want), err)
	}
	if st, _ := os.Stat(dst); st.Mode().Perm() != 0o755 {
		t.Errorf("mode %v, want 0755", st.Mode().Perm())
	}
	if out, err := exec.Command(dst, "--version").Output(); err != nil || len(out) == 0 {
		t.Errorf("the copy does not run: %q, %v", out, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("the directory holds %d entries, want the copy alone (no temporary file left)", len(entries))
	}
	if err := exec.Command(binary, "install").Run(); err == nil {
		t.Error("install without --to succeeded")
	}
}
