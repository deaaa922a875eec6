package execserver

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wire"
	"go.uber.org/zap"
)

// Binder builds the handler of each exec-server connection: the handshake
// gate (docs/protocol.md §5.1) in front of the process methods and of any extra
// methods (the fs/* bindings), all sharing one Registry.
type Binder struct {
	reg     *Registry
	extra   map[string]rpc.HandlerFunc
	perConn func(c *rpc.Conn, gate func() error) map[string]rpc.HandlerFunc
	log     *zap.Logger
}

// NewBinder returns a Binder. extra maps method names to handlers that run
// after the handshake, under the "filesystem" family for fs/* names.
func NewBinder(reg *Registry, extra map[string]rpc.HandlerFunc, logger *zap.Logger) *Binder {
	if logger == nil {
		logger = zap.NewNop()
	}
	return &Binder{reg: reg, extra: extra, log: logger}
}

// WithConnExtra adds methods whose handlers keep per-connection state
// (fs/watchMissing): f is called once per connection, from Bind. Its
// handlers check the handshake themselves, by calling gate (the
// "filesystem" family) after decoding their params, since a decoding error
// wins over the handshake's. It returns b.
func (b *Binder) WithConnExtra(f func(c *rpc.Conn, gate func() error) map[string]rpc.HandlerFunc) *Binder {
	b.perConn = f
	return b
}

// Bind is an rpc.Options.Bind function. When the connection ends, its
// session is detached. The opening and the close of the connection are
// logged at info, the close with its session (if it got one) and how long
// it lasted.
func (b *Binder) Bind(c *rpc.Conn) rpc.Handler {
	h := &connHandler{b: b, reg: b.reg, c: c, stdin: newStdinBudget(c, b.reg.cfg.StdinParkBytes)}
	if b.perConn != nil {
		h.connExtra = b.perConn(c, func() error { return h.check("filesystem") })
	}
	opened := time.Now()
	peer := connPeer(c.Label())
	b.log.Info("connection opened", zap.String("peer", peer))
	// Once the connection ends, its session is detached and the close
	// logged; no goroutine waits for that meanwhile.
	c.AtEnd(func() {
		h.stdin.end()
		fields := []zap.Field{zap.String("peer", peer)}
		// An initialize under way finishes first: the session it
		// attached is detached here. One that comes later attaches
		// none (initialize).
		h.initMu.Lock()
		s := h.sess.Load()
		h.initMu.Unlock()
		if s != nil {
			fields = append(fields, zap.String("session", s.id))
			b.reg.detach(s, c)
		}
		b.log.Info("connection closed", append(fields, zap.Int64("duration_ms", time.Since(opened).Milliseconds()))...)
	})
	return h
}

// connPeer returns the peer of a connection from its framer label: the
// remote address of a WebSocket connection, "stdio" for the stdio one.
func connPeer(label string) string {
	if peer, ok := strings.CutPrefix(label, wire.LabelWebSocketPrefix); ok {
		return peer
	}
	if label == wire.LabelStdio {
		return "stdio"
	}
	return label
}

// Handshake states of a connection.
const (
	stateNew         int32 = iota // nothing yet
	stateInitialized              // initialize succeeded
	stateReady                    // initialized received
)

// connHandler is the per-connection handler. It is used by the connection's
// reader goroutine (Preempt) and handler goroutine (Handle) concurrently, so
// its state is atomic.
type connHandler struct {
	b     *Binder
	reg   *Registry
	c     *rpc.Conn
	state atomic.Int32
	sess  atomic.Pointer[Session]
	// initMu is held by initialize from its handshake check to the
	// session's store, and by the connection's end while it reads the
	// session to detach: concurrent initialize requests
	// (--concurrent-requests N >= 2) see each other's outcome, and a
	// session attached to the connection is always the one its end
	// detaches.
	initMu sync.Mutex
	stdin  *stdinBudget // parked process/write calls

	parkedReads atomic.Int32 // process/read calls waiting (MaxParkedReads)

	connExtra map[string]rpc.HandlerFunc // this connection's stateful extra methods; read-only

	experimental atomic.Bool // initialize carried capabilities.experimentalApi
	cmds         cmdExecs    // the connection's command/exec runs
	http         httpConn    // the connection's http/request streams

	startsMu sync.Mutex
	starts   map[string]int // guarded by startsMu: ids of process/start requests received, not yet handled
}

var _ rpc.Preempter = (*connHandler)(nil)

// check enforces the handshake for a method family.
func (h *connHandler) check(family string) error {
	switch h.state.Load() {
	case stateNew:
		return wire.ErrBeforeInitialize(family)
	case stateInitialized:
		return wire.ErrBeforeInitialized(family)
	}
	return nil
}

// session returns the connection's session; valid after check succeeded.
func (h *connHandler) session() *Session { return h.sess.Load() }

// Handle implements rpc.Handler.
func (h *connHandler) Handle(ctx context.Context, req *rpc.Request) (any, error) {
	if req.IsNotification() {
		if req.Method != wire.MethodInitialized {
			return nil, rpc.CloseConn(wire.ErrUnexpectedNotification(req.Method))
		}
		if !h.state.CompareAndSwap(stateInitialized, stateReady) && h.state.Load() == stateNew {
			return nil, rpc.CloseConn(nil) // initialized before initialize
		}
		return nil, nil
	}
	if m, ok := methods[req.Method]; ok {
		if req.Method == wire.MethodProcessStart {
			defer h.startHandled(req)
		}
		return m.run(ctx, h, req)
	}
	if f, ok := h.connExtra[req.Method]; ok {
		return f(ctx, req) // gates itself
	}
	if f, ok := h.b.extra[req.Method]; ok {
		if err := h.check("filesystem"); err != nil {
			return nil, err
		}
		return f(ctx, req)
	}
	return nil, wire.ErrMethodNotImplemented(req.Method)
}

// Preempt answers control requests at once, even while earlier requests of
// the connection still wait (docs/protocol.md §1.5). Before the handshake nothing
// is preempted, so handshake errors come back in wire order.
//
// A control request for a process whose process/start was received but not
// yet handled is not preempted: it waits behind the start, so that it sees
// the process (the order of requests is the order of their effects).
func (h *connHandler) Preempt(ctx context.Context, req *rpc.Request) (any, error, bool) {
	if req.Method == wire.MethodProcessStart {
		h.startReceived(req)
		return nil, nil, false
	}
	if h.state.Load() != stateReady {
		return nil, nil, false
	}
	m, ok := methods[req.Method]
	if !ok || !m.control {
		return nil, nil, false
	}
	if h.startPending(req) {
		return nil, nil, false
	}
	res, err := m.run(ctx, h, req)
	return res, err, true
}

// processIDOf returns the processId member of a request's params.
func processIDOf(req *rpc.Request) (string, bool) {
	var p struct {
		ProcessID *string `json:"processId"`
	}
	if len(req.Params) == 0 || json.Unmarshal(req.Params, &p) != nil || p.ProcessID == nil {
		return "", false
	}
	return *p.ProcessID, true
}

// startReceived records a process/start before it is queued. Called by the
// reading goroutine, which sees every request.
func (h *connHandler) startReceived(req *rpc.Request) {
	if id, ok := processIDOf(req); ok {
		h.startsMu.Lock()
		if h.starts == nil {
			h.starts = map[string]int{}
		}
		h.starts[id]++
		h.startsMu.Unlock()
	}
}

// startHandled undoes startReceived once the start was handled (the process
// is in the session, or the start failed).
func (h *connHandler) startHandled(req *rpc.Request) {
	if id, ok := processIDOf(req); ok {
		h.startsMu.Lock()
		if n := h.starts[id]; n > 1 {
			h.starts[id] = n - 1
		} else {
			delete(h.starts, id) // also when Preempt never saw it (concurrent modes)
		}
		h.startsMu.Unlock()
	}
}

// startPending reports whether req names a process whose start is queued.
func (h *connHandler) startPending(req *rpc.Request) bool {
	id, ok := processIDOf(req)
	if !ok {
		return false
	}
	h.startsMu.Lock()
	defer h.startsMu.Unlock()
	return h.starts[id] > 0
}
