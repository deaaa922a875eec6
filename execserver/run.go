package execserver

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"

	"go.uber.org/zap"

	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wire"
)

// shutdownTimeout bounds how long Run waits, after serving ended, for the
// remaining process trees to be killed and reaped.
const shutdownTimeout = 5 * time.Second

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
	JWT *rpc.JWTVerifier
	// PeerGate, when not nil, gets the registry's peer check as soon as the
	// registry exists (before any process can start), so that the
	// server's other listeners (--metrics-listen, --debug-pprof) refuse
	// the peers the WebSocket listener refuses (docs/operations.md §10).
	PeerGate *rpc.PeerGate
	// Stdin and Stdout carry the stdio connection; URLOut receives the
	// bound URL. Nil means io.EOF on read and io.Discard on write.
	Stdin  io.Reader
	Stdout io.Writer
	URLOut io.Writer
}

// Run serves cfg until ctx is done (or, with Stdio, until the connection
// ends), then kills every remaining process tree and waits for them up to
// shutdownTimeout. A failure to start (registry, listener) is returned at
// once; an incomplete shutdown is logged, not returned. A nil logger logs
// nothing.
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
	binder := NewBinder(reg, cfg.Extra, logger)
	opts := rpc.Options{Bind: binder.Bind, Logger: logger, Concurrency: cfg.Concurrency}
	if cfg.Stdio {
		err = serveStdio(ctx, cfg, opts)
	} else {
		err = serveWebSocket(ctx, cfg, opts, reg.CheckPeer, logger)
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if serr := reg.Shutdown(sctx); serr != nil {
		logger.Warn("shutdown incomplete", zap.Error(serr))
	}
	return err
}

// serveStdio serves one connection over cfg.Stdin and cfg.Stdout until it
// ends or ctx is done.
func serveStdio(ctx context.Context, cfg Config, opts rpc.Options) error {
	in, out := orEOF(cfg.Stdin), orDiscard(cfg.Stdout)
	opts.ParseError = wire.ParseError(false)
	conn := rpc.NewConn(rpc.NewStdioFramer(in, out, nil, wire.LabelStdio, cfg.MaxMessage), opts)
	cfg.Sessions.Metrics.ConnOpened()
	defer cfg.Sessions.Metrics.ConnClosed()
	select {
	case <-conn.Done():
	case <-ctx.Done():
		_ = conn.Close()
	}
	// The reader may stay blocked on stdin; the process exits right after.
	return nil
}

// serveWebSocket listens on cfg.Addr, announces the URL and serves
// upgrades until ctx is done.
func serveWebSocket(ctx context.Context, cfg Config, opts rpc.Options, checkPeer rpc.PeerCheck, logger *zap.Logger) error {
	ip := cfg.Addr.Addr().Unmap() // ::ffff:a.b.c.d is a.b.c.d
	ln, err := net.Listen(listenNetwork(ip), netip.AddrPortFrom(ip, cfg.Addr.Port()).String())
	if err != nil {
		return fmt.Errorf("listening on %s: %v", cfg.Addr, err)
	}
	url := "ws://" + boundAddr(cfg.Addr, ln.Addr()).String()
	fmt.Fprintln(orDiscard(cfg.URLOut), url)
	logger.Info("exec-server listening", zap.String("url", url))
	opts.ParseError = wire.ParseError(true)
	srv := &rpc.WebSocketServer{Conn: opts, MaxMessage: cfg.MaxMessage, TokenSHA256: cfg.TokenSHA256, JWT: cfg.JWT, Logger: logger, CheckPeer: checkPeer, LabelPrefix: wire.LabelWebSocketPrefix,
		OnAuthFailure: cfg.Sessions.Metrics.AuthFailed, MaxConnections: cfg.MaxConnections, Observer: cfg.Sessions.Metrics}
	return srv.Serve(ctx, ln)
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
