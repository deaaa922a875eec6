package cli

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/codexec/codex/proc"
	"github.com/codexec/codex/sandbox"
	"github.com/urfave/cli/v2"
	"go.uber.org/zap"
)

// stateDirFlag names the runtime state directory where a server's
// watchdog keeps its records (docs/operations.md §5).
var stateDirFlag = &cli.StringFlag{
	Name:  "state-dir",
	Usage: "`DIR` of runtime records (the watchdog's list of placeholders, for the next server to remove those a killed server left); default /run/codex-exec for root, else $XDG_RUNTIME_DIR/codex-exec or a codex-exec-UID folder in the temporary directory",
}

// WatchdogMain is the hidden entry point of the watchdog process
// (argv[0] proc.WatchdogName), started by a server with its logging
// flags and state directory.
func WatchdogMain(args []string) int {
	fs := flag.NewFlagSet(proc.WatchdogName, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	records := fs.Bool("records", false, "")
	level := fs.String("log-level", "info", "")
	format := fs.String("log-format", "console", "")
	if err := fs.Parse(args); err != nil {
		fmt.Fprintln(os.Stderr, proc.WatchdogName+": "+err.Error())
		return 2
	}
	logger, err := newLogger(*level, *format)
	if err != nil {
		logger = zap.NewNop()
	}
	defer func() { _ = logger.Sync() }()
	return proc.RunWatchdog(logger.With(zap.Int("server", os.Getppid())), *records, sandbox.RemoveOrphanedPlaceholder)
}

// startWatchdog starts the server's watchdog, which kills what the server
// started and removes its placeholders if it is killed with SIGKILL; the
// returned function stops it. Call it before anything makes a
// TreeKiller, and stop it after the server is done. A server that cannot
// start it refuses to run.
func startWatchdog(c *cli.Context, logger *zap.Logger, level, format string) (stop func(), err error) {
	dir := c.String(stateDirFlag.Name)
	if dir == "" {
		dir = proc.DefaultStateDir()
	}
	w, err := proc.StartWatchdog(logger, dir, []string{"--log-level", level, "--log-format", format}, sandbox.RemoveRecordedPlaceholder)
	if err != nil {
		return nil, fmt.Errorf("cannot start the watchdog: %w", err)
	}
	sandbox.WatchPlaceholders(w) // until stop: the runs' placeholders outlive a killed server no more
	// A record tells the next server what to remove: no sandboxed command
	// may write one, also when the directory lies below a writable root
	// (codex-exec-UID in /tmp, writable under workspace-write).
	sandbox.MaskSecrets(dir)
	return func() { sandbox.WatchPlaceholders(nil); w.Stop() }, nil
}
