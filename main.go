// Command codex is a Go reimplementation of the Codex CLI's exec-server: a
// JSON-RPC executor of processes and filesystem calls for coding agents.
//
// main.go dispatches the hidden entry points of the re-executed binary and
// hands everything else to package cli, which holds the command tree.
package main

import (
	"os"
	"path/filepath"

	"github.com/codexec/codex/cli"
	"github.com/codexec/codex/fshelper"
	"github.com/codexec/codex/proc"
	"github.com/codexec/codex/sandbox"
	"github.com/codexec/codex/shelltool/escalate"
)

// hiddenEntry dispatches the re-executed helper modes: the exec wrapper
// (argv[0] "codex-execve-wrapper", first: it runs once per intercepted
// exec), the sandbox helper (argv[0] "codex-linux-sandbox") and the
// filesystem helper ("--fs-helper", or the reference's
// "--codex-run-as-fs-helper"), and a server's watchdog (argv[0]
// "codex-exec-watchdog").
func hiddenEntry(args []string) (int, bool) {
	if filepath.Base(args[0]) == escalate.WrapperName {
		return escalate.WrapperMain(), true
	}
	if filepath.Base(args[0]) == proc.WatchdogName {
		return cli.WatchdogMain(args[1:]), true
	}
	if filepath.Base(args[0]) == sandbox.HelperName {
		return sandbox.ChildMain(sandbox.ChildOptions{FSHelper: fshelper.ChildMain}), true
	}
	if len(args) > 1 && (args[1] == "--fs-helper" || args[1] == "--codex-run-as-fs-helper") {
		return fshelper.ChildMain(), true
	}
	return 0, false
}

func main() {
	// Hidden entry points first: they run inside sandboxed children, with no
	// logger and no server state.
	if code, ok := hiddenEntry(os.Args); ok {
		os.Exit(code)
	}
	os.Exit(cli.Main(os.Args))
}
