package shelltool

import (
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/codexec/codex/sandbox"
	"github.com/codexec/codex/shelltool/escalate"
)

// init makes the test binary the sandbox helper or the exec wrapper when
// re-executed as one (sandbox.Available probes the helper, the runner's
// tests run Bash under it and the patched Bash execs the wrapper).
func init() {
	switch filepath.Base(os.Args[0]) {
	case sandbox.HelperName:
		os.Exit(sandbox.ChildMain(sandbox.ChildOptions{}))
	case escalate.WrapperName:
		os.Exit(escalate.WrapperMain())
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
