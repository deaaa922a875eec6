package cli

import (
	"fmt"
	"os"

	"github.com/codexec/codex/internal/reap"
	"github.com/urfave/cli/v2"
	"go.uber.org/zap"
)

// initFlag makes the server reap orphans as an init process would.
var initFlag = &cli.BoolFlag{
	Name:    "init",
	EnvVars: []string{"CODEX_EXEC_SERVER_INIT"},
	Usage:   "reap orphaned processes: always done as PID 1; otherwise the server becomes a child subreaper for its commands' orphans",
}

// startReaper starts the orphan reaper when the server runs as PID 1 of
// its PID namespace or --init asks for it. The returned function stops it;
// call it after the server (and its children) are done.
func startReaper(c *cli.Context, logger *zap.Logger) (stop func(), err error) {
	if !c.Bool(initFlag.Name) && os.Getpid() != 1 {
		return func() {}, nil
	}
	r, err := reap.Start(logger)
	if err != nil {
		return nil, fmt.Errorf("--init: %w", err)
	}
	return r.Close, nil
}
