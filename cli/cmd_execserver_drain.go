package cli

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/codexec/codex/execserver"
	"github.com/urfave/cli/v2"
)

// shutdownGraceFlag is exec-server's --shutdown-grace (docs/operations.md
// §5). The default, 5 s, lets a command that traps TERM (a build tool, a
// dev server) save and exit, and still leaves the server time to tell its
// clients and exit before the usual hard stops: `docker stop` kills after
// 10 s, Kubernetes after 30 s, systemd after 90 s.
var shutdownGraceFlag = &cli.DurationFlag{Name: "shutdown-grace", Value: execserver.DefaultShutdownGrace,
	Usage: "`DURATION` processes get between SIGTERM and SIGKILL when the server stops (a second signal skips it); a stdio server also lets them run this long after its input ends; 0: SIGKILL at once"}

// shutdownGrace reads --shutdown-grace for execserver.Config, whose zero
// means the default and negative none.
func shutdownGrace(c *cli.Context) (time.Duration, error) {
	d := c.Duration(shutdownGraceFlag.Name)
	switch {
	case d < 0:
		return 0, errNegativeGrace
	case d == 0:
		return -1, nil
	}
	return d, nil
}

var errNegativeGrace = errors.New("--shutdown-grace must not be negative")

// secondSignal returns a channel closed at the second SIGINT or SIGTERM
// (the first, which cancelled ctx through Main's signal.NotifyContext,
// starts the drain; the second ends its grace), and a function that stops
// watching. A signal that came before the watch began counts as the first.
func secondSignal(ctx context.Context) (hurry <-chan struct{}, stop func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	seen := 0
	if ctx.Err() != nil {
		seen = 1
	}
	h := make(chan struct{})
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		for {
			select {
			case <-sigs:
				if seen++; seen == 2 {
					close(h)
					return
				}
			case <-done:
				return
			}
		}
	}()
	return h, func() {
		signal.Stop(sigs)
		close(done)
		<-ended
	}
}
