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
// "--codex-run-as-fs-helper"), and a server's watchdog (argv[0]
// "codex-exec-watchdog").
func hiddenEntry(args []string) (int, bool) {
	if filepath.Base(args[0]) == escalate.WrapperName {
		return escalate.WrapperMain(), true
	}
	if filepath.Base(args[0]) == proc.WatchdogName {
		return watchdogMain(args[1:]), true
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
	// Children must not inherit an ignored SIGINT/SIGHUP from our parent.
	defer proc.ClaimIgnoredSignals()()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	app := newApp()
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

// newApp is the command tree with the conventions of cli_conventions.go.
func newApp() *cli.App {
	cli.VersionFlag = &cli.BoolFlag{Name: "version", Aliases: []string{"V"}, Usage: "print the version and exit"}
	cli.VersionPrinter = func(c *cli.Context) { fmt.Fprintln(c.App.Writer, versionLine()) }
	app := &cli.App{
		Name:    "codex",
		Usage:   "exec-server for coding agents, wire-compatible with Codex CLI " + protocolVersion,
		Version: buildVersion(),
		Commands: []*cli.Command{
			execServerCommand(),
			execCommand(),
			sandboxCommand(),
			execMCPServerCommand(),
			execpolicyCommand(),
			installCommand(),
			completionCommand(),
		},
		EnableBashCompletion: true,
		ExitErrHandler:       func(*cli.Context, error) {}, // exit codes are handled in main
	}
	applyConventions(app)
	return app
}
