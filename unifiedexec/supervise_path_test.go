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

// fakeCodex writes a `codex` script into a new directory that prints
// version for --version and otherwise records its arguments in the
// returned marker file and exits, so a start fails.
func fakeCodex(t *testing.T, version string) (dir, marker string) {
	t.Helper()
	dir = t.TempDir()
	marker = filepath.Join(dir, "ran")
	script := "#!/bin/sh\nif [ \"$1\" = --version ]; then echo '" + version + "'; exit 0; fi\necho \"$*\" > " + marker + "\n"
	if err := os.WriteFile(filepath.Join(dir, "codex"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, marker
}

// Zero options never re-exec the calling program: Path defaults to the
// codex binary found in $PATH, once its --version says it is ours.
func TestSuperviseZeroPathUsesPATH(t *testing.T) {
	dir, marker := fakeCodex(t, "codex devel (exec-server protocol 0.169.0)")
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

// A codex first in $PATH that is not ours (OpenAI's CLI prints
// "codex-cli X") is refused before it runs, with an error that says why
// and how to name the binary (docs/client.md §3.1).
func TestSuperviseRefusesForeignCodex(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, o := range []unifiedexec.SuperviseOptions{{}, {Path: "codex"}} {
		dir, marker := fakeCodex(t, "codex-cli 0.46.0")
		t.Setenv("PATH", dir)
		_, err := unifiedexec.Supervise(ctx, o)
		if _, statErr := os.Stat(marker); statErr == nil {
			t.Errorf("Path %q: the foreign codex was run as an exec-server", o.Path)
		}
		if err == nil || !strings.Contains(err.Error(), "not this project's codex") ||
			!strings.Contains(err.Error(), "codex-cli 0.46.0") || !strings.Contains(err.Error(), "SuperviseOptions.Path") {
			t.Errorf("Path %q: err = %v", o.Path, err)
		}
		t.Logf("Path %q: %v", o.Path, err)
	}
}
