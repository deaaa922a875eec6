package shelltool

import (
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/codexec/codex/sandbox"
)

// init makes the test binary the sandbox helper when re-executed as one
// (sandbox.Available probes it, the runner's tests run Bash under it).
func init() {
	if filepath.Base(os.Args[0]) == sandbox.HelperName {
		os.Exit(sandbox.ChildMain(sandbox.ChildOptions{}))
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
