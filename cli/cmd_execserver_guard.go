package cli

import (
	"context"

	"github.com/urfave/cli/v2"
	"go.uber.org/zap"
)

// warnUnauthenticated logs a warning when the server listens on an address
// other hosts may reach (anything but loopback, the unspecified addresses
// included) and no --ws-auth mode is set: whoever reaches the port runs
// commands as the server's user.
func warnUnauthenticated(c *cli.Context, target listenTarget, logger *zap.Logger) {
	if target.stdio || target.addr.Addr().IsLoopback() || c.String("ws-auth") != "" {
		return
	}
	logger.Warn("listening on a non-loopback address without authentication: anyone who reaches it can run commands as this user; set --ws-auth",
		zap.String("addr", target.addr.String()))
}

// exitOnStdinClose returns a context that ends with ctx or when stdin
// reaches end of file (--exit-on-stdin-close), and a function that stops
// the watch and waits for it.
func exitOnStdinClose(ctx context.Context, logger *zap.Logger) (context.Context, func(), error) {
	closed, stopWatch, err := watchStdinClose(0) // fd 0 itself: os.Stdin.Fd would make it blocking
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-closed:
			logger.Info("stdin closed; shutting down (--exit-on-stdin-close)")
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		cancel()
		<-done
		stopWatch()
	}, nil
}
