package unifiedexec

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wire"
)

// ClientName is the clientName sent in initialize.
const ClientName = "codex-go-unifiedexec"

// Timeouts of docs/client.md §2.
const (
	ConnectTimeout    = 10 * time.Second
	InitializeTimeout = 10 * time.Second
	RecoveryDeadline  = 25 * time.Second
	recoveryPacing    = 100 * time.Millisecond
	// resumeAttachedWait bounds how long Dial with ResumeSessionID retries
	// a session that another connection holds (-32010): long enough for a
	// loaded server to see the end of a connection closed just before.
	resumeAttachedWait = 5 * time.Second
	maxMessageBytes    = 64 << 20
)

var (
	// ErrClosed is returned by calls on a Client after Close.
	ErrClosed = errors.New("unifiedexec: client closed")
	// ErrTransport is wrapped by every error caused by a lost connection:
	// "exec-server transport disconnected[: reason]".
	ErrTransport = errors.New("exec-server transport disconnected")
	// ErrServerGoingAway fails a client whose server closed the connection
	// with 1001 (going away: it is shutting down); it wraps ErrTransport.
	ErrServerGoingAway = fmt.Errorf("%w: exec-server is shutting down (close 1001, going away)", ErrTransport)
	// ErrUnknownProcess is returned when the server does not know a process.
	ErrUnknownProcess = errors.New("unknown process id")
	// ErrStdinClosed is returned by writes to a process whose stdin is closed
	// or was never a pipe.
	ErrStdinClosed = errors.New("stdin is closed for this process")
)

// transportError wraps ErrTransport with a reason.
func transportError(reason string) error {
	if reason == "" {
		return ErrTransport
	}
	return fmt.Errorf("%w: %s", ErrTransport, reason)
}

// DialOptions configure Dial. The zero value is usable.
type DialOptions struct {
	// Token, when set, is sent as `Authorization: Bearer <Token>`.
	Token string
	// TokenSource, when set, is asked for the bearer token before every
	// connection attempt, the first and each recovery, and replaces Token
	// (SignedToken.Source mints short-lived signed tokens). Its error fails
	// that attempt.
	TokenSource func(context.Context) (string, error)
	// Logger receives client logs (connection loss, recovery, protocol
	// oddities); nil means none.
	Logger *slog.Logger
	// ResumeSessionID, when set, reattaches to that detached session
	// (docs/protocol.md §5.2) instead of creating one: its processes keep
	// running, their output since the detach is read by seq (Client.Read),
	// and they are addressed by id. Dial fails with a *WireError
	// (rpc.ErrInvalidRequest) when the session is unknown or expired, and
	// (wire.IsSessionAttached) when another connection still holds it
	// after up to 5 s of retries (one closed just before may not have been
	// seen to end by the server yet).
	ResumeSessionID string
	// KeepSession makes Close only detach: the session's processes keep
	// running for the server's detached-session TTL, and a later Dial with
	// ResumeSessionID: SessionID() reattaches. False (the zero value): Close
	// ends the session first (EndSession), killing its processes and what
	// they left running, as a finished ssh session does.
	KeepSession bool
	// RecoveryTimeout bounds how long a lost connection is retried (resume)
	// before the client and its processes fail; 0 means RecoveryDeadline.
	RecoveryTimeout time.Duration
}

// connector opens a new transport and returns a Conn bound to the client's
// handler. It is how Dial and Supervise differ.
type connector interface {
	connect(ctx context.Context, c *Client) (*rpc.Conn, error)
	// recover handles the loss of conn and returns the next connection, or an
	// error that fails the client for good. It runs on the monitor goroutine.
	recover(ctx context.Context, c *Client, reason string) (*rpc.Conn, error)
	// stop releases the transport's resources at Close.
	stop()
}

// Client is a connection to an exec-server. It is safe for concurrent use.
// Create it with Dial or Supervise; Close releases it.
type Client struct {
	log   *slog.Logger
	tr    connector
	ctx   context.Context // cancelled by Close
	stop  context.CancelFunc
	wg    sync.WaitGroup // the monitor goroutine
	keep  bool           // Close detaches only (DialOptions.KeepSession)
	ids   atomic.Uint64
	wrIDs atomic.Uint64

	mu        sync.Mutex
	conn      *rpc.Conn            // guarded by mu; nil while recovering or failed
	ready     chan struct{}        // guarded by mu; closed when conn is set or the client fails
	changed   chan struct{}        // guarded by mu; closed and replaced when conn, failed or closed change
	failed    error                // guarded by mu; set once the client cannot recover
	closed    bool                 // guarded by mu
	sessionID string               // guarded by mu
	env       wire.EnvironmentInfo // guarded by mu
	procs     map[string]*Process  // guarded by mu: live processes by id
	// cmdExecs are the running command/exec calls by processId (guarded
	// by mu; nil until the first).
	cmdExecs map[string]*CommandExecHandle
}

// Dial connects to a WebSocket exec-server at url (ws://host:port) and
// performs the handshake. It blocks for at most ConnectTimeout plus
// InitializeTimeout, or until ctx is done; ctx bounds only the dial, not the
// Client's life.
func Dial(ctx context.Context, url string, opts DialOptions) (*Client, error) {
	recovery := opts.RecoveryTimeout
	if recovery <= 0 {
		recovery = RecoveryDeadline
	}
	return newClient(ctx, &wsConnector{url: url, token: opts.Token, source: opts.TokenSource, recovery: recovery}, opts.Logger, opts.ResumeSessionID, opts.KeepSession)
}

func newClient(ctx context.Context, tr connector, sl *slog.Logger, resume string, keep bool) (*Client, error) {
	c := &Client{log: cmp.Or(sl, slog.New(slog.DiscardHandler)), tr: tr, ready: make(chan struct{}), changed: make(chan struct{}), procs: map[string]*Process{}, keep: keep}
	c.ctx, c.stop = context.WithCancel(context.Background())
	conn, err := c.open(ctx, tr, resume)
	if err != nil {
		c.stop()
		tr.stop()
		return nil, err
	}
	c.setConn(conn)
	c.wg.Add(1)
	go c.monitor(conn)
	return c, nil
}

// open connects and performs the handshake. A resume answered -32010 is
// tried again, every recoveryPacing for at most resumeAttachedWait (as a
// recovery retries it, docs/client.md §11): the session may be held by a
// connection closed just before (Close with KeepSession) whose end the
// server has not read yet, since nothing orders its reading of that end
// before the new connection's initialize. When ctx ends during the
// retries, the error is the -32010.
func (c *Client) open(ctx context.Context, tr connector, resume string) (*rpc.Conn, error) {
	deadline := time.Now().Add(resumeAttachedWait)
	var attached error // the last -32010
	for attempt := 1; ; attempt++ {
		conn, err := tr.connect(ctx, c)
		if err == nil {
			if err = c.handshake(ctx, conn, resume); err == nil {
				return conn, nil
			}
			conn.Close()
			conn.Wait()
		}
		if attached != nil && ctx.Err() != nil {
			return nil, attached
		}
		if resume == "" || !wire.IsSessionAttached(err) || time.Now().After(deadline) {
			return nil, err
		}
		attached = err
		c.log.Debug("resumed session still attached; trying again", "session", resume, "attempt", attempt)
		t := time.NewTimer(recoveryPacing)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, err
		}
	}
}

// handshake sends initialize (resuming resume when not empty) and
// initialized, and records the session and environment.
func (c *Client) handshake(ctx context.Context, conn *rpc.Conn, resume string) error {
	ctx, cancel := context.WithTimeout(ctx, InitializeTimeout)
	defer cancel()
	// experimentalApi unlocks command/exec's permissionProfile.
	p := wire.InitializeParams{ClientName: ClientName, Capabilities: &wire.Capabilities{ExperimentalAPI: true}}
	if resume != "" {
		p.ResumeSessionID = &resume
	}
	var res struct {
		wire.InitializeResult
		// EnvironmentInfo shadows the embedded member to tell an absent or
		// null one, which the server is then asked for, from an object.
		EnvironmentInfo *wire.EnvironmentInfo `json:"environmentInfo"`
	}
	if err := conn.Call(ctx, wire.MethodInitialize, p, &res); err != nil {
		return fmt.Errorf("initialize: %w", wire.InitializeError(resume != "", wireError(wire.MethodInitialize, err)))
	}
	if res.EnvironmentInfo == nil {
		res.EnvironmentInfo = new(wire.EnvironmentInfo)
		if err := conn.Call(ctx, wire.MethodEnvironmentInfo, nil, res.EnvironmentInfo); err != nil {
			return fmt.Errorf("environment/info: %w", err)
		}
	}
	if err := conn.Notify(ctx, wire.MethodInitialized, struct{}{}); err != nil {
		return fmt.Errorf("initialized: %w", err)
	}
	c.mu.Lock()
	c.sessionID = res.SessionID
	c.env = *res.EnvironmentInfo
	c.mu.Unlock()
	return nil
}

// newConn wraps a transport in an rpc.Conn whose handler routes the
// process notifications to c; websocket selects the parse-error wording.
func (c *Client) newConn(f rpc.Framer, websocket bool) *rpc.Conn {
	return rpc.NewConn(f, rpc.Options{
		Logger:     c.log,
		Bind:       func(*rpc.Conn) rpc.Handler { return rpc.HandlerFunc(c.handle) },
		ParseError: wire.ParseError(websocket),
		Predecode:  c.predecode,
	})
}

func (c *Client) setConn(conn *rpc.Conn) {
	c.mu.Lock()
	c.conn = conn
	close(c.ready)
	c.changedLocked()
	c.mu.Unlock()
}

// changedLocked wakes every waitReplaced: conn, failed or closed changed.
// c.mu must be held.
func (c *Client) changedLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// SessionID returns the server session id of the current connection.
func (c *Client) SessionID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessionID
}

// Environment returns the environmentInfo of the last handshake.
func (c *Client) Environment() wire.EnvironmentInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.env
}

// monitor waits for the current connection to end and recovers from it,
// until the client is closed or recovery fails.
func (c *Client) monitor(conn *rpc.Conn) {
	defer c.wg.Done()
	for {
		select {
		case <-conn.Done():
		case <-c.ctx.Done():
			conn.Close()
			conn.Wait()
			return
		}
		conn.Wait()
		if c.ctx.Err() != nil {
			return
		}
		reason := "connection closed"
		if conn.PeerGoingAway() {
			// The server is shutting down (close 1001): its sessions end
			// with it, so no resume can succeed there. Fail at once, so
			// that the caller can connect again (elsewhere) without
			// waiting out the recovery (docs/client.md §11).
			c.log.Info("exec-server is shutting down (close 1001)", "label", conn.Label())
			c.fail(ErrServerGoingAway)
			return
		}
		c.mu.Lock()
		if c.conn == conn {
			c.conn = nil
			c.ready = make(chan struct{})
			c.changedLocked()
		}
		c.mu.Unlock()
		c.log.Info("exec-server connection lost; recovering", "label", conn.Label())
		next, err := c.tr.recover(c.ctx, c, reason)
		if err != nil {
			if c.ctx.Err() != nil {
				return
			}
			c.fail(err)
			return
		}
		c.setConn(next)
		conn = next
	}
}

// fail marks the client failed with err and fails every live process.
func (c *Client) fail(err error) {
	c.mu.Lock()
	if c.failed == nil {
		c.failed = err
	}
	c.conn = nil
	select {
	case <-c.ready:
	default:
		close(c.ready)
	}
	c.changedLocked()
	procs := c.takeProcs()
	c.mu.Unlock()
	for _, p := range procs {
		p.failWith(err)
	}
}

// takeProcs empties the process table. c.mu must be held.
func (c *Client) takeProcs() []*Process {
	ps := make([]*Process, 0, len(c.procs))
	for id, p := range c.procs {
		ps = append(ps, p)
		delete(c.procs, id)
	}
	return ps
}

// Close ends the session (EndSession, unless DialOptions.KeepSession):
// every process of the session dies with what it left running before
// Close goes on; a server without session/end (the reference) gets
// process/terminate for each live process this client started and keeps
// the rest until its session TTL, as it does while the connection is being
// recovered. Close then ends the connection, stops a supervised server
// child, fails every live process with ErrClosed and waits for every
// goroutine the Client started, but not for a running OnOutput or OnEvent
// callback. It is idempotent and never blocks for more than a few seconds
// (a supervised child gets SIGTERM, then SIGKILL after 2 s).
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.changedLocked()
	procs := c.takeProcs()
	conn := c.conn
	c.mu.Unlock()
	if !c.keep && conn != nil {
		endOrKill(conn, procs)
	}
	c.stop()
	c.wg.Wait()
	c.tr.stop()
	for _, p := range procs {
		p.failWith(ErrClosed)
	}
	return nil
}

// current returns the live connection, waiting while the client recovers.
// It fails at once once the client is closed or failed.
func (c *Client) current(ctx context.Context) (*rpc.Conn, error) {
	for {
		c.mu.Lock()
		if err := c.stateErrLocked(); err != nil {
			c.mu.Unlock()
			return nil, err
		}
		if conn := c.conn; conn != nil {
			c.mu.Unlock()
			return conn, nil
		}
		ready := c.ready
		c.mu.Unlock()
		select {
		case <-ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// handle receives the server's messages: process notifications are routed
// to their Process; requests are refused.
func (c *Client) handle(_ context.Context, req *rpc.Request) (any, error) {
	if !req.IsNotification() {
		return nil, rpc.Errorf(rpc.CodeMethodNotFound, "method not found: %s", req.Method)
	}
	if _, routed := req.Decoded.(routedDelta); routed {
		return nil, nil
	}
	n, ok := req.Decoded.(procNote)
	if !ok {
		var err error
		if n, ok, err = decodeParams(req.Method, req.Params); err != nil {
			c.log.Debug("bad notification", "method", req.Method, "error", err)
		}
		if !ok {
			return nil, nil
		}
	}
	c.route(n.processID, []Event{n.ev})
	return nil, nil
}

// route hands events to a live process; unknown ids are ignored.
func (c *Client) route(id string, evs []Event) {
	c.mu.Lock()
	p := c.procs[id]
	c.mu.Unlock()
	if p != nil {
		p.deliver(evs)
	}
}

// unregister removes p from the process table.
func (c *Client) unregister(p *Process) {
	c.mu.Lock()
	if c.procs[p.id] == p {
		delete(c.procs, p.id)
	}
	c.mu.Unlock()
}

// wsConnector dials a WebSocket server and recovers with resume.
type wsConnector struct {
	url, token string
	source     func(context.Context) (string, error) // nil: token
	recovery   time.Duration
}

func (w *wsConnector) connect(ctx context.Context, c *Client) (*rpc.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, ConnectTimeout)
	defer cancel()
	token := w.token
	if w.source != nil {
		var err error
		if token, err = w.source(ctx); err != nil {
			return nil, fmt.Errorf("bearer token for %s: %w", w.url, err)
		}
	}
	var opts websocket.DialOptions
	if token != "" {
		opts.HTTPHeader = http.Header{"Authorization": {"Bearer " + token}}
	}
	wc, resp, err := websocket.Dial(ctx, w.url, &opts)
	body := refusalBody(resp)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w%s", w.url, err, body)
	}
	return c.newConn(rpc.NewWebSocketFramer(wc, wire.LabelWebSocketPrefix+w.url, maxMessageBytes), true), nil
}

func (w *wsConnector) recover(ctx context.Context, c *Client, reason string) (*rpc.Conn, error) {
	return c.resume(ctx, func(ctx context.Context) (*rpc.Conn, error) { return w.connect(ctx, c) }, reason, w.recovery)
}

func (w *wsConnector) stop() {}

// stateErrLocked returns ErrClosed or the failure that ended the client,
// or nil while it is usable. c.mu must be held.
func (c *Client) stateErrLocked() error {
	switch {
	case c.closed:
		return ErrClosed
	case c.failed != nil:
		return c.failed
	}
	return nil
}

// refusalBody reads and closes the body of a refused WebSocket upgrade
// (such as a 401 and its reason) and returns it as ": <text>", the first
// line and at most 512 bytes; "" when there is none.
func refusalBody(resp *http.Response) string {
	if resp == nil || resp.Body == nil {
		return ""
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	text, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if text == "" {
		return ""
	}
	return ": " + text
}
