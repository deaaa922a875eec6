package escalate

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/codexec/codex/internal/testbin"
)

// codexBinary is the codex binary, built once for the package's wrapper
// tests (run under the name codex-execve-wrapper through a symlink), the
// way `make build` builds it, so that start-up figures are the release's.
var codexBinary string

// init makes the test binary the escalation trampoline when the
// Escalator re-executes it as one.
func init() {
	if filepath.Base(os.Args[0]) == ExecName {
		os.Exit(ExecMain())
	}
}

func TestMain(m *testing.M) {
	_ = os.Setenv("CGO_ENABLED", "0")
	testbin.Main(m, &codexBinary, "../..", "-tags", "urfave_cli_no_docs")
}
