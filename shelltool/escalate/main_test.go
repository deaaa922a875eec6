package escalate

import (
	"testing"

	"github.com/codexec/codex/internal/testbin"
)

// binary is the codex binary, built once for the package's wrapper tests
// (run under the name codex-execve-wrapper through a symlink).
var codexBinary string

func TestMain(m *testing.M) { testbin.Main(m, &codexBinary, "../..") }
