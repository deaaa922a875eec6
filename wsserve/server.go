package wsserve

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
	"github.com/codexec/codex/internal/zapslog"
	"github.com/codexec/codex/rpc"
	"go.uber.org/zap"
)

// WebSocketServer serves JSON-RPC over WebSocket on one listener
// (docs/protocol.md §1.2): the upgrade on "/", a readiness probe on "/readyz"
// and a liveness probe on "/livez", 404 elsewhere, 403 for any request with
// an Origin header, optional bearer-token authentication of the upgrade,
// and 503 beyond MaxConnections.
type WebSocketServer struct {
	// Conn configures each connection (Bind, Logger, Concurrency, ...).
	Conn rpc.Options
	// MaxMessage is the inbound message limit in bytes.
	MaxMessage int64
	// TokenSHA256, when set, requires `Authorization: Bearer <token>` whose
	// SHA-256 equals it (compared in constant time).
	TokenSHA256 []byte
	// JWT, when set (and TokenSHA256 is not), requires `Authorization:
	// Bearer <token>` with a signed token it accepts.
	JWT *JWTVerifier
	// PingInterval is the keep-alive ping period (30 s when zero; negative
	// disables). A missing pong never closes the connection.
	PingInterval time.Duration
	// Logger receives server logs; nil means none.
	Logger *zap.Logger
	// CheckPeer, when set, is asked about every upgrade request with the
	// connection's local and remote TCP addresses; an error refuses the
	// upgrade with 403 and is logged as the reason (the server uses it to
	// keep sandboxed commands out). It runs on the connection's own
	// goroutine: a slow check holds up no other connection.
	CheckPeer PeerCheck
	// LabelPrefix starts each connection's framer label, followed by the
	// peer address. Empty means "websocket ".
	LabelPrefix string
	// OnAuthFailure, when set, is called for every upgrade refused with
	// 401 (the server counts them).
	OnAuthFailure func()
	// MaxConnections, when positive, bounds the connections open at once:
	// an upgrade beyond it is refused with 503 (limit.go).
	MaxConnections int
	// Observer, when set, is told of every connection and refusal.
	Observer ConnObserver
	// Drain, when set, runs once Serve's context is done, before the
	// connections are closed, while the listener still answers: /readyz
	// 503, /livez 200, and every upgrade 503 "server is shutting down"
	// (docs/operations.md §5).
	Drain func()
	// CloseWithin bounds the close of each connection at the end of Serve
	// (2 s when zero); they are closed with 1001 (going away), all at once.
	CloseWithin time.Duration
	// IdleTimeout is how long a connection that is not a WebSocket (a
	// probe's, kept alive) may wait for its next request
	// (DefaultIdleTimeout when zero). A refused request ends its
	// connection at once. Neither is counted by MaxConnections.
	IdleTimeout time.Duration

	mu     sync.Mutex
	conns  map[*rpc.Conn]struct{} // guarded by mu
	open   int                    // guarded by mu: connections reserved or upgraded
	closed bool                   // guarded by mu: Serve is draining or closing; upgrades are refused, new connections closed at once
	wg     sync.WaitGroup         // every ServeHTTP call past the closed check
}

// Serve accepts connections on ln until ctx is done, then closes every
// connection and waits for them.
func (s *WebSocketServer) Serve(ctx context.Context, ln net.Listener) error {
	if s.Logger == nil {
		s.Logger = zap.NewNop()
	}
	s.conns = map[*rpc.Conn]struct{}{}
	idle := s.IdleTimeout
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: idle, ErrorLog: zap.NewStdLog(s.Logger)}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	if s.Drain != nil && err == nil {
		s.Drain()
	}
	// Hijacked connections are not closed by Close; ours are tracked.
	_ = srv.Close()
	s.closeConns()
	s.wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// closeConns closes every connection with 1001 (going away), all at once,
// each within CloseWithin, and waits for the closes.
func (s *WebSocketServer) closeConns() {
	within := s.CloseWithin
	if within <= 0 {
		within = rpc.CloseWithin
	}
	var wg sync.WaitGroup
	s.mu.Lock()
	for c := range s.conns {
		wg.Go(func() { c.CloseGoingAway(within) })
	}
	s.mu.Unlock()
	wg.Wait()
}

// ServeHTTP implements http.Handler.
func (s *WebSocketServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Origin") != "" || len(r.Header.Values("Origin")) > 0 {
		plainError(w, http.StatusForbidden, "Origin header is not allowed")
		return
	}
	if s.probe(w, r) {
		return
	}
	if !headerHasToken(r.Header, "Connection", "upgrade") {
		plainError(w, http.StatusBadRequest, "Connection header did not include 'upgrade'")
		return
	}
	if !s.peerAllowed(w, r) {
		return
	}
	if msg, ok := s.authorize(r); !ok {
		s.rejectAuth(w, r, msg)
		return
	}
	// Counted before the upgrade, so that Serve waits for a connection
	// upgraded while it closes the others, and closes it.
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.observer().ConnRefused(RefusedShutdown)
		plainError(w, http.StatusServiceUnavailable, "server is shutting down")
		return
	}
	if !s.reserve() {
		s.mu.Unlock()
		s.refuseLimit(w, r)
		return
	}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	defer s.unreserve()
	hj := &hijackRecorder{ResponseWriter: w}
	wc, err := websocket.Accept(hj, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled, InsecureSkipVerify: true})
	if err != nil {
		s.Logger.Debug("websocket upgrade failed", zap.Error(err))
		return
	}
	s.observer().ConnOpened()
	defer s.observer().ConnClosed()
	prefix := s.LabelPrefix
	if prefix == "" {
		prefix = "websocket "
	}
	label := prefix + r.RemoteAddr
	f := rpc.NewHijackedWebSocketFramer(wc, hj.conn, label, s.MaxMessage)
	c := rpc.NewConn(f, s.connOptions(r.RemoteAddr))
	s.mu.Lock()
	s.conns[c] = struct{}{}
	if s.closed {
		_ = c.Close()
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}()
	// The connection's opening and close are logged by its Bind.
	s.keepAlive(c, wc)
	c.Wait()
}

// probe answers every path but "/": /readyz (503 while draining), /livez
// and 404 elsewhere; it reports whether it answered.
func (s *WebSocketServer) probe(w http.ResponseWriter, r *http.Request) bool {
	switch r.URL.Path {
	case "/readyz":
		s.mu.Lock()
		draining := s.closed
		s.mu.Unlock()
		if draining {
			plainError(w, http.StatusServiceUnavailable, "server is shutting down")
			return true
		}
		w.WriteHeader(http.StatusOK)
		return true
	case "/livez":
		w.WriteHeader(http.StatusOK)
		return true
	case "/":
		return false
	default:
		w.Header().Set("Connection", "close")
		http.NotFound(w, r)
		return true
	}
}

// DefaultIdleTimeout is WebSocketServer.IdleTimeout's default.
const DefaultIdleTimeout = 30 * time.Second

// peerAllowed runs CheckPeer and answers 403 if it refuses the peer.
func (s *WebSocketServer) peerAllowed(w http.ResponseWriter, r *http.Request) bool {
	if s.CheckPeer == nil || !refusePeer(s.CheckPeer, "websocket", s.Logger, w, r) {
		return true
	}
	s.observer().ConnRefused(RefusedPeer)
	return false
}

func (s *WebSocketServer) connOptions(peer string) rpc.Options {
	o := s.Conn
	if o.Logger == nil {
		o.Logger = zapslog.New(s.Logger)
	}
	o.Logger = o.Logger.With("peer", peer)
	return o
}

// keepAlive pings every PingInterval until the connection ends, holding
// no goroutine between pings. A missing pong is ignored
// (docs/protocol.md §1.2).
func (s *WebSocketServer) keepAlive(c *rpc.Conn, wc *websocket.Conn) {
	every := s.PingInterval
	if every == 0 {
		every = 30 * time.Second
	}
	if every < 0 {
		return
	}
	c.Every(every, func(ctx context.Context) {
		pctx, cancel := context.WithTimeout(ctx, every)
		_ = wc.Ping(pctx)
		cancel()
	})
}

// rejectAuth answers 401 with reason, logs the refusal at info with the
// peer and the reason (never the token), and reports it to OnAuthFailure.
func (s *WebSocketServer) rejectAuth(w http.ResponseWriter, r *http.Request, reason string) {
	s.Logger.Info("websocket authentication rejected", zap.String("peer", r.RemoteAddr), zap.String("reason", reason))
	if s.OnAuthFailure != nil {
		s.OnAuthFailure()
	}
	s.observer().ConnRefused(RefusedAuth)
	plainError(w, http.StatusUnauthorized, reason)
}

// authorize checks the bearer token of the upgrade request (docs/protocol.md
// §1.3) and returns the 401 body on failure.
func (s *WebSocketServer) authorize(r *http.Request) (string, bool) {
	if s.TokenSHA256 == nil && s.JWT == nil {
		return "", true
	}
	h := r.Header.Get("Authorization")
	if h == "" {
		return "missing websocket bearer token", false
	}
	scheme, token, ok := strings.Cut(h, " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" || !utf8.ValidString(token) {
		return "invalid authorization header", false
	}
	if s.TokenSHA256 == nil {
		msg := s.JWT.Verify(token)
		return msg, msg == ""
	}
	sum := sha256.Sum256([]byte(token))
	if subtle.ConstantTimeCompare(sum[:], s.TokenSHA256) != 1 {
		return "invalid websocket bearer token", false
	}
	return "", true
}

func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// plainError writes a plain-text error body without a trailing newline
// and ends the connection: a refused client holds none.
func plainError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Connection", "close")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(msg))
}

// hijackRecorder keeps the connection that websocket.Accept hijacks, so
// that a shutdown can bound its writes with a deadline (wsFramer.bound),
// and hands the library that connection wrapped in an rpc.CorkConn.
type hijackRecorder struct {
	http.ResponseWriter
	conn net.Conn
}

// WriteHeader ends the connection after any answer but the upgrade: an
// upgrade the library refuses (400, 426) holds no connection, as the
// listener's own refusals (plainError) hold none.
func (h *hijackRecorder) WriteHeader(code int) {
	if code != http.StatusSwitchingProtocols {
		h.ResponseWriter.Header().Set("Connection", "close")
	}
	h.ResponseWriter.WriteHeader(code)
}

func (h *hijackRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := h.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("http.ResponseWriter does not implement http.Hijacker")
	}
	c, rw, err := hj.Hijack()
	if err != nil {
		return c, rw, err
	}
	// The library writes through rw.Writer: pointed at a CorkConn, it
	// lets a batch of messages leave in one write (rpc.Conn.SendBatch).
	cork := rpc.NewCorkConn(c)
	if err := rw.Writer.Flush(); err != nil { // empty after a hijack; Reset drops what it holds
		return c, rw, err
	}
	rw.Writer.Reset(cork)
	h.conn = cork
	return cork, rw, nil
}
