package unifiedexec_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codexec/codex/unifiedexec"
)

// Zero options never re-exec the calling program: Path defaults to the
// codex binary found in $PATH. The stand-in here records its arguments and
// exits, so the start fails.
func TestSuperviseZeroPathUsesPATH(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	script := "#!/bin/sh\necho \"$*\" > " + marker + "\n"
	if err := os.WriteFile(filepath.Join(dir, "codex"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := unifiedexec.Supervise(ctx, unifiedexec.SuperviseOptions{MaxRestarts: -1}); err == nil {
		t.Fatal("a stand-in that exits at once passed the handshake")
	}
	b, err := os.ReadFile(marker)
	if err != nil || strings.TrimSpace(string(b)) != "exec-server --listen stdio" {
		t.Fatalf("the codex of $PATH did not run: %q %v", b, err)
	}

	t.Setenv("PATH", t.TempDir())
	_, err = unifiedexec.Supervise(ctx, unifiedexec.SuperviseOptions{MaxRestarts: -1})
	if err == nil || !strings.Contains(err.Error(), "locating the codex binary") {
		t.Fatalf("no codex in $PATH: err = %v", err)
	}
}
