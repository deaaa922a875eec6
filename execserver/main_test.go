package execserver

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/codexec/codex/fshelper"
	"github.com/codexec/codex/sandbox"
	"go.uber.org/goleak"
)

// TestMain runs the sandbox helper when the test binary is re-executed as
// one (sandboxed starts wrap the command in our running image), and the
// tests otherwise, followed by a goroutine leak check.
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == sandbox.HelperName {
		os.Exit(sandbox.ChildMain(sandbox.ChildOptions{FSHelper: fshelper.ChildMain}))
	}
	goleak.VerifyTestMain(m)
}
