// Command codex is a Go reimplementation of the Codex CLI's exec-server: a
// JSON-RPC executor of processes and filesystem calls for coding agents.
//
// main.go is wiring only: the command tree, the logger and the root
// context. Each subcommand lives in a cmd_*.go file as a thin adapter.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/codexec/codex/fshelper"
	"github.com/codexec/codex/proc"
	"github.com/codexec/codex/sandbox"
	"github.com/codexec/codex/shelltool/escalate"
	"github.com/urfave/cli/v2"
)

// hiddenEntry dispatches the re-executed helper modes: the exec wrapper
// (argv[0] "codex-execve-wrapper", first: it runs once per intercepted
// exec), the sandbox helper (argv[0] "codex-linux-sandbox") and the
// filesystem helper ("--fs-helper", or the reference's
// "--codex-run-as-fs-helper").
func hiddenEntry(args []string) (int, bool) {
	if filepath.Base(args[0]) == escalate.WrapperName {
		return escalate.WrapperMain(), true
	}
	if filepath.Base(args[0]) == sandbox.HelperName {
		return sandbox.ChildMain(sandbox.ChildOptions{FSHelper: fshelper.ChildMain}), true
	}
	if len(args) > 1 && (args[1] == "--fs-helper" || args[1] == "--codex-run-as-fs-helper") {
		return fshelper.ChildMain(), true
	}
	return 0, false
}

// version is the version of this binary; the protocol version it speaks is
// reported separately in environment/info.
var version = "0.1.0-dev"

func main() {
	// Hidden entry points first: they run inside sandboxed children, with no
	// logger and no server state.
	if code, ok := hiddenEntry(os.Args); ok {
		os.Exit(code)
	}
	// Children must not inherit an ignored SIGINT/SIGHUP from our parent.
	defer proc.ClaimIgnoredSignals()()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	app := &cli.App{
		Name:    "codex",
		Usage:   "exec-server for coding agents, wire-compatible with Codex CLI 0.169.0",
		Version: version + " (exec-server protocol 0.169.0)",
		Commands: []*cli.Command{
			execServerCommand(),
			sandboxCommand(),
			execCommand(),
			execMCPServerCommand(),
			execpolicyCommand(),
			installCommand(),
		},
		ExitErrHandler: func(*cli.Context, error) {}, // exit codes are handled below
	}
	args := os.Args
	if filepath.Base(args[0]) == mcpServerName {
		args = append([]string{args[0], "exec-mcp-server"}, args[1:]...)
	}
	err := app.RunContext(ctx, args)
	stop()
	if err != nil {
		code := 1
		if ec, ok := err.(cli.ExitCoder); ok {
			code = ec.ExitCode()
		}
		if msg := err.Error(); msg != "" {
			fmt.Fprintln(os.Stderr, "codex: "+msg)
		}
		os.Exit(code)
	}
}
