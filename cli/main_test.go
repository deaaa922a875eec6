package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/codexec/codex/fshelper"
	"github.com/codexec/codex/proc"
	"github.com/codexec/codex/sandbox"
	"go.uber.org/goleak"
)

// TestMain runs the hidden entry points when the test binary is
// re-executed as one (the private server of `exec run` starts its
// watchdog, and sandboxed starts their helper, from our running image, as
// main.go dispatches them), and the tests otherwise, followed by a
// goroutine leak check.
func TestMain(m *testing.M) {
	switch filepath.Base(os.Args[0]) {
	case proc.WatchdogName:
		os.Exit(WatchdogMain(os.Args[1:]))
	case sandbox.HelperName:
		os.Exit(sandbox.ChildMain(sandbox.ChildOptions{FSHelper: fshelper.ChildMain}))
	}
	goleak.VerifyTestMain(m)
}
