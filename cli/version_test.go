package cli

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// TestVersionFlagFromLdflags builds the binary with a version set at link
// time, as `make build` does, and checks that --version and -V print it on
// one line of stdout and exit 0.
func TestVersionFlagFromLdflags(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "codex")
	build := exec.Command("go", "build", "-tags", "urfave_cli_no_docs", "-ldflags", "-X github.com/codexec/codex/cli.version=v9.8.7-test", "-o", bin, "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, flag := range []string{"--version", "-V"} {
		cmd := exec.Command(bin, flag)
		var stderr []byte
		out, err := cmd.Output()
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		if want := "codex v9.8.7-test (exec-server protocol " + protocolVersion + ")\n"; err != nil || string(out) != want || len(stderr) != 0 {
			t.Errorf("codex %s: %v, stdout %q, stderr %q; want %q", flag, err, out, stderr, want)
		}
	}
}
