package shelltool

import (
	"context"
	"errors"
	"io"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/codexec/codex/internal/zapslog"
	"github.com/codexec/codex/rpc"
)

// ProtocolVersion is the newest MCP protocol version this server speaks.
const ProtocolVersion = "2025-06-18"

// instructions is the initialize result's instructions text (docs/shell-tool.md §3.1).
const instructions = "This server provides a tool to execute shell commands and return their output."

// maxMessage bounds one inbound MCP message.
const maxMessage = 64 << 20

// Config configures a Server. Evaluate and Runner are required; the
// rest defaults.
type Config struct {
	// Name and Version are the serverInfo of initialize.
	Name, Version string
	// Evaluate judges each intercepted exec ((*execpolicy.Policy).Evaluate
	// adapted).
	Evaluate EvaluateFunc
	// PreserveProgramPaths matches rules on full program paths.
	PreserveProgramPaths bool
	// Programs identifies the rules' programs by file (docs/shell-tool.md
	// §11.3); nil judges by names only.
	Programs *Programs
	// Escalation is what an escalation trusts (§11.1-§11.2); nil trusts
	// no directory: no program escalates from a sandboxed call.
	Escalation *EscalationPolicy
	// Network narrows the network of a call whose sandbox state enables
	// it to a proxy (docs/shell-tool.md §3.6); nil gives such a call the
	// whole network.
	Network *NetworkProxy
	// Runner runs one shell call (NewBashRunner).
	Runner Runner
	// Cwd resolves relative workdirs; empty means the process's cwd.
	Cwd string
	// Clock times the calls; nil means RealClock.
	Clock Clock
	// Logger receives the server's logs; nil means none. Never stdout.
	Logger *zap.Logger
}

// eofAnswerWait bounds the wait, at the end of input, for the answers to
// the requests read: calls are cancelled then, so only a handler stuck
// on something else could take longer.
const eofAnswerWait = 5 * time.Second

// stuckWait bounds the wait for the connection's goroutines once it is
// closed: a write to a stdout that the client does not read cannot be
// interrupted, and must not keep the server from exiting.
const stuckWait = 3 * time.Second

// Serve speaks MCP over r (the client's requests) and w (our messages)
// until r ends, ctx is done, or the transport fails (docs/shell-tool.md
// §3.1). At the end of r, running calls are cancelled (their commands
// killed: the client is gone) and every request read gets its answer
// before Serve returns. When it returns, every call has been cancelled and
// every goroutine of the server has ended, unless one is stuck writing to
// w. closer, when not nil, is closed to unblock a read of r when ctx ends
// (it does when r is a pollable file: see cli/cmd_mcp.go).
func Serve(ctx context.Context, r io.Reader, w io.Writer, closer io.Closer, cfg Config) error {
	if cfg.Evaluate == nil || cfg.Runner == nil {
		return errors.New("shelltool: Config needs Evaluate and Runner")
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		cfg.Cwd = wd
	}
	f := rpc.NewStdioFramer(r, w, closer, "stdio", maxMessage)
	var h *handler
	c := rpc.NewConn(f, rpc.Options{
		Logger: zapslog.New(cfg.Logger), JSONRPC: true, StrictJSONRPC: true, CallIDsFromZero: true, HoldAtEOF: true,
		Bind: func(c *rpc.Conn) rpc.Handler { h = newHandler(c, &cfg); return h },
	})
	select {
	case <-c.Done():
	case <-ctx.Done():
	case <-c.InputEnded():
		h.stopCalls()
		t := time.NewTimer(eofAnswerWait)
		select {
		case <-c.Answered():
		case <-ctx.Done():
		case <-c.Done():
		case <-t.C:
		}
		t.Stop()
	}
	_ = c.Close()
	waited := make(chan struct{})
	go func() { c.Wait(); close(waited) }()
	t := time.NewTimer(stuckWait)
	defer t.Stop()
	select {
	case <-waited:
	case <-t.C:
		cfg.Logger.Warn("a write to stdout is stuck; exiting without it")
	}
	return nil
}
