package execserver

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"

	"go.uber.org/zap"

	"github.com/codexec/codex/internal/zapslog"
	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wire"
	"github.com/codexec/codex/wsserve"
)

// shutdownTimeout bounds how long Run waits, after serving ended, for the
// remaining process trees to be killed and reaped. After a drain, which
// killed and waited for them already, only drainedShutdownTimeout is left
// for watchers stuck on a client that does not read.
const (
	shutdownTimeout        = 5 * time.Second
	drainedShutdownTimeout = 10 * time.Millisecond
)

// DefaultShutdownGrace is the drain's grace when Config.ShutdownGrace is
// zero (docs/operations.md §5).
const DefaultShutdownGrace = 5 * time.Second

// closeWithin bounds the close of each connection at the end of a drain
// for a client that does not read: a WebSocket write that it takes nothing
// of for this long fails (one that reads still gets the answers left and
// the 1001, rpc.Conn.CloseGoingAway); a stdio close takes no longer.
const closeWithin = 20 * time.Millisecond

// Config is what Run serves and how. The zero value serves WebSocket on
// the zero AddrPort (an invalid address: set Addr or Stdio) with the
// SessionConfig defaults, no authentication and no extra methods.
type Config struct {
	// Stdio serves one connection over Stdin/Stdout instead of listening
	// on Addr.
	Stdio bool
	// Addr is the TCP address of the WebSocket listener (port 0: an
	// ephemeral port). Its URL, ws://ADDR, is written to URLOut as one line
	// once the listener is bound.
	Addr netip.AddrPort
	// Sessions configures the registry of sessions and their processes.
	Sessions SessionConfig
	// Extra are the methods served beside the process/* and environment/*
	// ones (fs/*), behind the same handshake gate. Nil means none.
	Extra map[string]rpc.HandlerFunc
	// ConnExtra, when set, is called once per connection for methods whose
	// handlers keep state for that connection (fs/watchMissing); they call
	// gate, the handshake check, after decoding their params (see
	// Binder.WithConnExtra). Whatever they start must end with the
	// connection (rpc.Conn.Go).
	ConnExtra func(c *rpc.Conn, gate func() error) map[string]rpc.HandlerFunc
	// Concurrency is rpc.Options.Concurrency of every connection.
	Concurrency int
	// MaxMessage is the largest inbound message; a larger one ends the
	// connection. It must be positive.
	MaxMessage int64
	// MaxConnections, when positive, bounds the WebSocket connections open
	// at once; an upgrade beyond it gets 503 (stdio has one connection).
	MaxConnections int
	// TokenSHA256, when not nil, is the SHA-256 of the bearer token every
	// WebSocket upgrade must present.
	TokenSHA256 []byte
	// JWT, when not nil, verifies the signed bearer token every WebSocket
	// upgrade must present.
	JWT *wsserve.JWTVerifier
	// PeerGate, when not nil, gets the registry's peer check as soon as the
	// registry exists (before any process can start), so that the
	// server's other listeners (--metrics-listen, --debug-pprof) refuse
	// the peers the WebSocket listener refuses (docs/operations.md §10).
	PeerGate *wsserve.PeerGate
	// Stdin and Stdout carry the stdio connection; URLOut receives the
	// bound URL. Nil means io.EOF on read and io.Discard on write.
	Stdin  io.Reader
	Stdout io.Writer
	URLOut io.Writer
	// ShutdownGrace is how long, once ctx is done, the processes get
	// between SIGTERM and SIGKILL (docs/operations.md §5); a stdio server
	// also lets its processes run this long on their own after the end of
	// its input. Zero means DefaultShutdownGrace; negative, none.
	ShutdownGrace time.Duration
	// Hurry, when closed during the drain, ends its grace at once (a
	// second signal). Nil means never.
	Hurry <-chan struct{}
}

// grace is cfg.ShutdownGrace with its default.
func (cfg *Config) grace() time.Duration {
	switch {
	case cfg.ShutdownGrace == 0:
		return DefaultShutdownGrace
	case cfg.ShutdownGrace < 0:
		return 0
	}
	return cfg.ShutdownGrace
}

// Run serves cfg until ctx is done (or, with Stdio, until the connection
// ends), drains (drain.go: SIGTERM to every process tree, SIGKILL at the
// end of the grace, their exits and closes sent), closes the connections
// and kills what is left. A failure to start (registry, listener) is
// returned at once; an incomplete shutdown is logged, not returned. A nil
// logger logs nothing.
func Run(ctx context.Context, cfg Config, logger *zap.Logger) error {
	if logger == nil {
		logger = zap.NewNop()
	}
	if cfg.MaxMessage <= 0 {
		return fmt.Errorf("execserver: MaxMessage must be positive")
	}
	reg, err := NewRegistry(cfg.Sessions, logger)
	if err != nil {
		return err
	}
	cfg.PeerGate.Set(reg.CheckPeer)
	binder := NewBinder(reg, cfg.Extra, logger).WithConnExtra(cfg.ConnExtra)
	opts := rpc.Options{Bind: binder.Bind, Logger: zapslog.New(logger), Concurrency: cfg.Concurrency}
	timeout := shutdownTimeout
	if cfg.Stdio {
		err = serveStdio(ctx, cfg, opts, reg)
		timeout = drainedShutdownTimeout
	} else {
		var drained bool
		drained, err = serveWebSocket(ctx, cfg, opts, reg, logger)
		if drained {
			timeout = drainedShutdownTimeout
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if serr := reg.Shutdown(sctx); serr != nil {
		logger.Warn("shutdown incomplete", zap.Error(serr))
	}
	return err
}

// serveStdio serves one connection over cfg.Stdin and cfg.Stdout until it
// ends or ctx is done, and drains (docs/protocol.md §1.4). At the end of
// the input, every request read is answered and the processes get the
// grace to end on their own before the drain. Stdin is closed at the end
// when it is an io.Closer, which ends a read pending on a pollable file.
func serveStdio(ctx context.Context, cfg Config, opts rpc.Options, reg *Registry) error {
	in, out := orEOF(cfg.Stdin), orDiscard(cfg.Stdout)
	closer, _ := cfg.Stdin.(io.Closer)
	opts.ParseError = wire.ParseError(false)
	opts.HoldAtEOF = true
	conn := rpc.NewConn(rpc.NewStdioFramer(in, out, closer, wire.LabelStdio, cfg.MaxMessage), opts)
	cfg.Sessions.Metrics.ConnOpened()
	defer cfg.Sessions.Metrics.ConnClosed()
	select {
	case <-conn.Done():
	case <-ctx.Done():
	case <-conn.InputEnded():
		reg.log.Debug("end of input; answering what was read")
		awaitQuiet(ctx, conn, reg, cfg.grace())
	}
	reg.Drain(cfg.grace(), cfg.Hurry)
	// A stdout that the client does not read may keep a write blocked:
	// the process exits right after anyway.
	conn.CloseGoingAway(closeWithin)
	return nil
}

// awaitQuiet waits, after the end of a stdio input, until every request
// read is answered and no process runs, or until grace has passed, ctx is
// done or the connection ended.
func awaitQuiet(ctx context.Context, conn *rpc.Conn, reg *Registry, grace time.Duration) {
	timer := time.NewTimer(grace)
	defer timer.Stop()
	answered := conn.Answered()
	for answered != nil || reg.drain.running.Load() > 0 {
		select {
		case <-answered:
			answered = nil
		case <-reg.drain.changed:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		case <-conn.Done():
			return
		}
	}
}

// serveWebSocket listens on cfg.Addr, announces the URL and serves
// upgrades until ctx is done, then drains; drained reports that it did.
func serveWebSocket(ctx context.Context, cfg Config, opts rpc.Options, reg *Registry, logger *zap.Logger) (drained bool, err error) {
	ip := cfg.Addr.Addr().Unmap() // ::ffff:a.b.c.d is a.b.c.d
	ln, err := net.Listen(listenNetwork(ip), netip.AddrPortFrom(ip, cfg.Addr.Port()).String())
	if err != nil {
		return false, fmt.Errorf("listening on %s: %v", cfg.Addr, err)
	}
	url := "ws://" + boundAddr(cfg.Addr, ln.Addr()).String()
	fmt.Fprintln(orDiscard(cfg.URLOut), url)
	logger.Info("exec-server listening", zap.String("url", url))
	opts.ParseError = wire.ParseError(true)
	srv := &wsserve.WebSocketServer{Conn: opts, MaxMessage: cfg.MaxMessage, TokenSHA256: cfg.TokenSHA256, JWT: cfg.JWT, Logger: logger, CheckPeer: reg.CheckPeer, LabelPrefix: wire.LabelWebSocketPrefix,
		OnAuthFailure: cfg.Sessions.Metrics.AuthFailed, CloseWithin: closeWithin,
		MaxConnections: cfg.MaxConnections, Observer: cfg.Sessions.Metrics,
		Drain: func() {
			drained = true
			reg.Drain(cfg.grace(), cfg.Hurry)
		}}
	err = srv.Serve(ctx, ln)
	return drained, err
}

// listenNetwork keeps a listener to the address family of its address:
// 0.0.0.0 is every IPv4 address only (not also every IPv6 one, as "tcp"
// would make it), and an IPv6 address is IPv6 only.
func listenNetwork(a netip.Addr) string {
	if a.Is4() {
		return "tcp4"
	}
	return "tcp6"
}

// boundAddr is the address as configured with the port the listener got
// (an ephemeral one for port 0).
func boundAddr(configured netip.AddrPort, bound net.Addr) netip.AddrPort {
	if tcp, ok := bound.(*net.TCPAddr); ok {
		return netip.AddrPortFrom(configured.Addr(), uint16(tcp.Port))
	}
	return configured
}

func orEOF(r io.Reader) io.Reader {
	if r == nil {
		return eofReader{}
	}
	return r
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// eofReader is an empty reader.
type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }
