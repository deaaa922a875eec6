package unifiedexec

import (
	"context"
	"io"
	"log/slog"
	"sync"

	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wire"
)

// AttachOptions configure Attach.
type AttachOptions struct {
	// Logger receives client logs; nil means none.
	Logger *slog.Logger
}

// Attach speaks the stdio transport of the protocol (newline-delimited
// JSON-RPC, docs/protocol.md §1.4) over r, the server's output, and w, its
// input, to an exec-server that the caller runs and owns (`codex exec
// run` serves its private server in its own process over two pipes), and
// performs the handshake. The Client never restarts or recovers that
// server: when r ends, its processes and calls fail with an error
// wrapping ErrTransport. Close ends the session and closes w (the
// server's end of input) and then r; stopping the server and waiting for
// it stays with the caller, after Close. A failed handshake closes both
// too.
func Attach(ctx context.Context, r io.ReadCloser, w io.WriteCloser, opts AttachOptions) (*Client, error) {
	return newClient(ctx, &attachConnector{r: r, w: w}, opts.Logger, "", false)
}

// attachConnector is the transport of Attach: one connection, no restart.
type attachConnector struct {
	r    io.ReadCloser
	w    io.WriteCloser
	once sync.Once
}

func (a *attachConnector) connect(_ context.Context, c *Client) (*rpc.Conn, error) {
	return c.newConn(rpc.NewStdioFramer(a.r, a.w, closeInputFirst{a.w, a.r}, wire.LabelStdio, maxMessageBytes), false), nil
}

func (a *attachConnector) recover(_ context.Context, c *Client, _ string) (*rpc.Conn, error) {
	lost := transportError("attached exec-server ended")
	c.mu.Lock()
	procs := c.takeProcs()
	c.mu.Unlock()
	for _, p := range procs {
		p.failWith(lost)
	}
	return nil, lost
}

func (a *attachConnector) stop() {
	a.once.Do(func() { _ = closeInputFirst{a.w, a.r}.Close() })
}

// closeInputFirst closes the server's input (w), then its output (r).
type closeInputFirst struct {
	w io.Closer
	r io.Closer
}

func (p closeInputFirst) Close() error {
	err := p.w.Close()
	_ = p.r.Close()
	return err
}
