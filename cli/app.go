// Package cli is the codex command line: the command tree, the logger and
// the root context, and each subcommand as a thin adapter in a cmd_*.go
// file. The program's main.go dispatches the hidden entry points of the
// re-executed binary and calls Main for everything else. Within this
// package the identifier cli names github.com/urfave/cli/v2.
package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/codexec/codex/proc"
	"github.com/urfave/cli/v2"
)

// Main runs the command line args (args[0] is the program) and returns the
// exit code: 0, the code of a cli.ExitCoder, or 1 for another error, whose
// message it prints to stderr.
func Main(args []string) int {
	// Children must not inherit an ignored SIGINT/SIGHUP from our parent.
	defer proc.ClaimIgnoredSignals()()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	app := newApp()
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
		return code
	}
	return 0
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
		ExitErrHandler:       func(*cli.Context, error) {}, // exit codes are handled in Main
	}
	applyConventions(app)
	return app
}
