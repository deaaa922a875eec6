package escalate

import (
	"os"
	"testing"

	"github.com/codexec/codex/internal/testbin"
)

// codexBinary is the codex binary, built once for the package's wrapper
// tests (run under the name codex-execve-wrapper through a symlink), the
// way `make build` builds it, so that start-up figures are the release's.
var codexBinary string

func TestMain(m *testing.M) {
	_ = os.Setenv("CGO_ENABLED", "0")
	testbin.Main(m, &codexBinary, "../..", "-tags", "urfave_cli_no_docs")
}
