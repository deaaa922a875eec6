package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Options configure a Conn. The zero value is usable: no handler (every
// request gets -32601) and ordered scheduling.
type Options struct {
	// Bind builds the connection's handler. Nil means no handler.
	Bind func(*Conn) Handler
	// Logger receives connection-level logs. Nil means no logs.
	Logger *zap.Logger
	// Concurrency selects request scheduling: 0 runs requests in arrival
	// order, lets a Preempter answer control requests at once and lets
	// handlers answer asynchronously; 1 runs strictly one request at a time
	// (an asynchronous answer is awaited before the next request); N >= 2 runs
	// up to N requests at once, answering in completion order.
	Concurrency int
	// JSONRPC adds "jsonrpc":"2.0" to every message sent (some peers, such
	// as MCP, require it).
	JSONRPC bool
	// ParseError words the -32600 error (id -1) answering an inbound message
	// that failed to parse: label is the framer's label, tooLarge is true
	// when the message exceeded the size limit (the connection then ends).
	// Nil means "failed to parse JSON-RPC message from <label>: <err>".
	ParseError func(label string, tooLarge bool, err error) string
	// Predecode, when set, sees every inbound message first, on the reading
	// goroutine, and may decode a notification it knows in one pass instead
	// of the generic decoding. It returns the method and the decoded params
	// (non-nil) of a message it recognises; the Conn then queues it to the
	// handler in arrival order like any other notification, as a Request
	// with Decoded set and Params nil. A nil value leaves the message to
	// the generic decoding, errors included. It must not retain data. Nil
	// means every message is decoded generically.
	Predecode func(data []byte) (method string, decoded any)
}

// Conn is one JSON-RPC connection over a Framer. It is symmetric: it answers
// the peer's requests through its Handler and can send its own requests with
// Call. All methods are safe for concurrent use.
//
// Messages are written by the goroutine that sends them, one at a time: the
// right to write is handed around through a 1-buffered channel, so frames
// never interleave and a sender blocks while the peer does not read (that is
// the backpressure from a slow peer; nothing is queued in memory). Writing
// in the sender's goroutine also spares a thread wake-up per message.
//
// Every request received is registered until it is answered, so it gets
// exactly one response: a second Respond for the same request is dropped,
// and when the connection ends with requests still unanswered (parked,
// running or queued), each gets an error response before the transport is
// closed, as long as the transport still takes writes.
//
// A Conn owns three goroutines (reader, handler, closer) plus those started
// with Go; Wait returns when all of them have returned.
type Conn struct {
	f      Framer
	opts   Options
	log    *zap.Logger
	h      Handler
	ctx    context.Context // cancelled when the connection ends
	cancel context.CancelFunc

	wtok      chan struct{} // holds one token: the right to write
	inq       chan queued   // drained by the handler goroutine only
	stopWrite chan struct{} // closed when no more messages may be written
	done      chan struct{} // closed when the connection has ended
	closeOnce sync.Once
	wg        sync.WaitGroup // every goroutine the Conn owns

	nextID    atomic.Int64
	mu        sync.Mutex
	pending   map[string]chan *Response // guarded by mu: our outgoing calls
	inflight  map[string][]*inbound     // guarded by mu: requests not yet answered, by id
	answering int                       // guarded by mu: claimed answers being written
	ending    bool                      // guarded by mu: shutdown began; no new claims
	swept     bool                      // guarded by mu: the unanswered were answered by shutdown
	drained   chan struct{}             // guarded by mu: closed when answering drops to 0 after ending
}

// inbound is one request received and not yet answered.
type inbound struct {
	id   ID
	done chan struct{} // strictly serial mode: closed once the answer is written
}

// queued is a request waiting for the handler goroutine.
type queued struct {
	req *Request
	in  *inbound // nil for a notification
}

// errUnanswered answers the requests still unanswered when the connection
// ends.
var errUnanswered = Errorf(CodeInternalError, "connection closed before the request was answered")

// NewConn starts serving a connection over f. Call Close to end it and Wait
// to wait for its goroutines.
func NewConn(f Framer, opts Options) *Conn {
	c := &Conn{
		f: f, opts: opts, log: opts.Logger,
		wtok:      make(chan struct{}, 1),
		inq:       make(chan queued, 256),
		stopWrite: make(chan struct{}),
		done:      make(chan struct{}),
		pending:   map[string]chan *Response{},
		inflight:  map[string][]*inbound{},
	}
	if c.log == nil {
		c.log = zap.NewNop()
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	if opts.Bind != nil {
		c.h = opts.Bind(c)
	}
	c.wtok <- struct{}{}
	c.wg.Add(3)
	go c.readLoop()
	go c.handleLoop()
	go func() {
		// Whoever cancels the context (a failed write, Close) ends the
		// connection through here, on a goroutine Wait covers.
		defer c.wg.Done()
		<-c.ctx.Done()
		c.shutdown(nil, false)
	}()
	return c
}

// Context returns a context that is cancelled when the connection ends.
func (c *Conn) Context() context.Context { return c.ctx }

// Done returns a channel closed when the connection has ended.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Label returns the framer's label (see Framer).
func (c *Conn) Label() string { return c.f.Label() }

// Go runs f on a goroutine owned by the connection. f's context is cancelled
// when the connection ends, and Wait waits for f to return. Go must be
// called from a goroutine the connection owns (a handler) or before Wait.
func (c *Conn) Go(f func(ctx context.Context)) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f(c.ctx)
	}()
}

// Close ends the connection: a message being written gets up to two seconds
// to finish, then the transport is closed and every context is cancelled.
// It does not wait for goroutines; use Wait.
func (c *Conn) Close() error {
	c.shutdown(nil, false)
	return nil
}

// Wait blocks until every goroutine owned by the connection has returned.
func (c *Conn) Wait() { c.wg.Wait() }

// shutdown ends the connection once. final, if not nil, is written last,
// after an error response to every request still unanswered. Answers
// already being written and a sender stuck on a peer that does not read are
// given two seconds in all before the transport is closed under them.
func (c *Conn) shutdown(final []byte, tooLarge bool) {
	c.closeOnce.Do(func() {
		deadline := time.Now().Add(2 * time.Second)
		timer := time.NewTimer(2 * time.Second)
		defer timer.Stop()
		c.mu.Lock()
		c.ending = true
		var drained chan struct{}
		if c.answering > 0 {
			drained = make(chan struct{})
			c.drained = drained
		}
		c.mu.Unlock()
		expired := false
		if drained != nil {
			select {
			case <-drained:
			case <-timer.C:
				expired = true
			}
		}
		close(c.stopWrite) // no new sends
		got := false
		if !expired {
			select {
			case <-c.wtok:
				got = true
			case <-timer.C:
			}
		}
		c.mu.Lock()
		c.swept = true
		var left []*inbound
		for _, ins := range c.inflight {
			left = append(left, ins...)
		}
		clear(c.inflight)
		c.mu.Unlock()
		if got {
			// The context may already be cancelled (a failed write); the
			// transport then fails these writes at once.
			ctx, cancel := context.WithDeadline(context.Background(), deadline)
			for _, in := range left {
				if c.f.Write(ctx, c.errorFrame(in.id, errUnanswered)) != nil {
					break
				}
			}
			if final != nil {
				_ = c.f.Write(ctx, final)
			}
			cancel()
		} else {
			c.cancel() // unblocks the stuck write on WebSocket transports
		}
		_ = c.f.Close(tooLarge)
		c.cancel()
		close(c.done)
	})
}

// register records a request until it is answered. It returns nil once
// shutdown has answered the unanswered requests: the request comes too late
// for any answer.
func (c *Conn) register(id ID) *inbound {
	in := &inbound{id: id}
	if c.opts.Concurrency == 1 {
		in.done = make(chan struct{})
	}
	key := idKey(id)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.swept {
		return nil
	}
	c.inflight[key] = append(c.inflight[key], in)
	return in
}

// claim takes the oldest unanswered request with id, for its one answer.
// It reports false if there is none (answered already, never received) or
// the connection is ending (shutdown answers it). A successful claim must be
// followed by answered.
func (c *Conn) claim(id ID) (*inbound, bool) {
	key := idKey(id)
	c.mu.Lock()
	defer c.mu.Unlock()
	ins := c.inflight[key]
	if c.ending || len(ins) == 0 {
		return nil, false
	}
	in := ins[0]
	if len(ins) == 1 {
		delete(c.inflight, key)
	} else {
		ins[0] = nil
		c.inflight[key] = ins[1:]
	}
	c.answering++
	return in, true
}

// answered ends a claim once the answer was written (or could not be).
func (c *Conn) answered(in *inbound) {
	if in.done != nil {
		close(in.done)
	}
	c.mu.Lock()
	c.answering--
	if c.answering == 0 && c.drained != nil {
		close(c.drained)
		c.drained = nil
	}
	c.mu.Unlock()
}

func (c *Conn) readLoop() {
	defer c.wg.Done()
	for {
		data, err := c.f.Read(c.ctx)
		if err != nil {
			if errors.Is(err, ErrTooLarge) {
				msg := c.errorFrame(Int64ID(-1), c.parseError(true, err))
				c.shutdown(msg, true)
				return
			}
			if !errors.Is(err, io.EOF) && c.ctx.Err() == nil {
				c.log.Debug("read ended", zap.Error(err))
			}
			c.shutdown(nil, false)
			return
		}
		if c.opts.Predecode != nil {
			if method, v := c.opts.Predecode(data); v != nil {
				if !c.dispatch(&Request{Method: method, Decoded: v}) {
					return
				}
				continue
			}
		}
		msg, err := DecodeMessage(data)
		if err != nil {
			if !c.sendFrame(c.errorFrame(Int64ID(-1), c.parseError(false, err))) {
				return
			}
			continue
		}
		switch m := msg.(type) {
		case *Response:
			if !c.deliver(m) {
				c.log.Debug("response to an unknown request; closing", zap.Stringer("id", m.ID))
				c.shutdown(nil, false)
				return
			}
		case *Request:
			if !c.dispatch(m) {
				return
			}
		}
	}
}

// parseError is the wire error answering a message that failed to parse.
func (c *Conn) parseError(tooLarge bool, err error) *Error {
	if c.opts.ParseError != nil {
		return &Error{Code: CodeInvalidRequest, Message: c.opts.ParseError(c.f.Label(), tooLarge, err)}
	}
	return Errorf(CodeInvalidRequest, "failed to parse JSON-RPC message from %s: %v", c.f.Label(), err)
}

// dispatch registers a request and hands it to the scheduler. It returns
// false once the connection has ended.
func (c *Conn) dispatch(req *Request) bool {
	q := queued{req: req}
	if !req.IsNotification() {
		if q.in = c.register(req.ID); q.in == nil {
			return false
		}
	}
	if c.opts.Concurrency == 0 && !req.IsNotification() {
		if p, ok := c.h.(Preempter); ok {
			if res, err, ok := p.Preempt(c.ctx, req); ok {
				c.finish(req, res, err)
				return c.ctx.Err() == nil
			}
		}
	}
	select {
	case c.inq <- q:
		return true
	case <-c.ctx.Done():
		return false
	}
}

func (c *Conn) handleLoop() {
	defer c.wg.Done()
	var sem chan struct{}
	if c.opts.Concurrency >= 2 {
		sem = make(chan struct{}, c.opts.Concurrency)
	}
	for {
		var q queued
		select {
		case q = <-c.inq:
		case <-c.ctx.Done():
			return
		}
		if sem == nil || q.req.IsNotification() {
			c.handleOne(q)
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-c.ctx.Done():
			return
		}
		c.Go(func(context.Context) {
			defer func() { <-sem }()
			c.handleOne(q)
		})
	}
}

// handleOne runs the handler for one message and answers it. In strictly
// serial mode an asynchronous answer is awaited, so that answers keep the
// request order.
func (c *Conn) handleOne(q queued) {
	res, err := c.call(q.req)
	if errors.Is(err, ErrAsync) {
		if q.in != nil && q.in.done != nil {
			select {
			case <-q.in.done:
			case <-c.ctx.Done():
			}
		}
		return
	}
	c.finish(q.req, res, err)
}

func (c *Conn) call(req *Request) (res any, err error) {
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("handler panic", zap.String("method", Clip(req.Method)), zap.Any("panic", p), zap.Stack("stack"))
			err = Errorf(CodeInternalError, "internal error in %s", Clip(req.Method))
		}
	}()
	if c.h == nil {
		return nil, Errorf(CodeMethodNotFound, "method not found: %s", Clip(req.Method))
	}
	return c.h.Handle(c.ctx, req)
}

// finish sends the answer for req, or ends the connection when asked to.
func (c *Conn) finish(req *Request, res any, err error) {
	var ce *closeError
	if errors.As(err, &ce) {
		// The final message stands for the request's answer.
		if !req.IsNotification() {
			if in, ok := c.claim(req.ID); ok {
				c.answered(in)
			}
		}
		var final []byte
		if ce.Final != nil {
			final = c.errorFrame(Int64ID(-1), ce.Final)
		}
		c.shutdown(final, false)
		return
	}
	if req.IsNotification() {
		if err != nil {
			c.log.Debug("notification failed", zap.String("method", Clip(req.Method)), zap.Error(err))
		}
		return
	}
	_ = c.Respond(req.ID, res, err)
}

// Respond answers the request id with result, or with err when it is not nil.
// It is how a handler that returned ErrAsync answers later. A request is
// answered once: Respond returns ErrClosed without writing anything when
// the request was already answered, or when the connection is ending (the
// ending connection answers it).
func (c *Conn) Respond(id ID, result any, err error) error {
	in, ok := c.claim(id)
	if !ok {
		return ErrClosed
	}
	defer c.answered(in)
	if sr, ok := result.(StreamedResult); ok && err == nil {
		return c.respondStream(id, sr) // see frame_stream.go
	}
	var frame []byte
	if err != nil {
		frame = c.errorFrame(id, ToWire(err))
	} else {
		frame, err = c.resultFrame(id, result)
		if err != nil {
			frame = c.errorFrame(id, Errorf(CodeInternalError, "failed to encode result: %v", err))
		}
	}
	if !c.sendFrame(frame) {
		return ErrClosed
	}
	return nil
}

func idKey(id ID) string { return string(id.AppendJSON(nil)) }

func (c *Conn) prefix(b []byte) []byte {
	if c.opts.JSONRPC {
		return append(b, `{"jsonrpc":"2.0",`...)
	}
	return append(b, '{')
}

func (c *Conn) resultFrame(id ID, result any) ([]byte, error) {
	var raw []byte
	switch r := result.(type) {
	case json.RawMessage:
		raw = r
	case nil:
		raw = []byte("{}")
	default:
		var err error
		if raw, err = json.Marshal(r); err != nil {
			return nil, err
		}
	}
	b := c.prefix(make([]byte, 0, len(raw)+32))
	b = append(b, `"id":`...)
	b = id.AppendJSON(b)
	b = append(b, `,"result":`...)
	b = append(b, raw...)
	return append(b, '}'), nil
}

func (c *Conn) errorFrame(id ID, e *Error) []byte {
	msg, _ := json.Marshal(e.Message)
	b := c.prefix(make([]byte, 0, len(msg)+48))
	b = append(b, `"error":{"code":`...)
	b = strconv.AppendInt(b, int64(e.Code), 10)
	b = append(b, `,"message":`...)
	b = append(b, msg...)
	if len(e.Data) > 0 {
		b = append(b, `,"data":`...)
		b = append(b, e.Data...)
	}
	b = append(b, `},"id":`...)
	b = id.AppendJSON(b)
	return append(b, '}')
}

// sendFrame writes a frame. It reports false once the connection has ended.
func (c *Conn) sendFrame(b []byte) bool { return c.Send(c.ctx, b, false) == nil }

// Send writes an already encoded message. It blocks while another message
// is being written and while the peer does not read (backpressure), until
// ctx is done or the connection ends; it returns ErrClosed in the latter
// case. When pooled is true, the buffer is returned to the frame pool (see
// AcquireFrame) afterwards.
func (c *Conn) Send(ctx context.Context, frame []byte, pooled bool) error {
	if pooled {
		defer ReleaseFrame(frame)
	}
	select {
	case <-c.wtok:
	case <-c.stopWrite:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	// Re-check: shutdown may have begun while we waited; it must not find
	// the token gone forever.
	select {
	case <-c.stopWrite:
		c.wtok <- struct{}{}
		return ErrClosed
	default:
	}
	err := c.f.Write(c.ctx, frame)
	c.wtok <- struct{}{}
	if err != nil {
		if c.ctx.Err() == nil {
			c.log.Debug("write failed", zap.Error(err))
		}
		// End the connection without holding up the caller: the closer
		// goroutine runs the shutdown.
		c.cancel()
		return ErrClosed
	}
	return nil
}

// Notify sends a notification with params marshalled by encoding/json.
func (c *Conn) Notify(ctx context.Context, method string, params any) error {
	b, err := c.requestFrame(ID{}, method, params)
	if err != nil {
		return err
	}
	return c.Send(ctx, b, false)
}

func (c *Conn) requestFrame(id ID, method string, params any) ([]byte, error) {
	b := c.prefix(nil)
	if id.IsValid() {
		b = append(b, `"id":`...)
		b = id.AppendJSON(b)
		b = append(b, ',')
	}
	m, _ := json.Marshal(method)
	b = append(b, `"method":`...)
	b = append(b, m...)
	if params != nil {
		p, err := json.Marshal(params)
		if err != nil {
			return nil, fmt.Errorf("encoding params of %s: %w", method, err)
		}
		b = append(b, `,"params":`...)
		b = append(b, p...)
	}
	return append(b, '}'), nil
}

// Call sends a request and waits for its response, decoding the result into
// result (which may be nil). A wire error comes back as *Error.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	id := Int64ID(c.nextID.Add(1))
	ch := make(chan *Response, 1)
	key := idKey(id)
	c.mu.Lock()
	c.pending[key] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, key)
		c.mu.Unlock()
	}()
	b, err := c.requestFrame(id, method, params)
	if err != nil {
		return err
	}
	if err := c.Send(ctx, b, false); err != nil {
		return err
	}
	select {
	case resp := <-ch:
		if resp.Error != nil {
			return resp.Error
		}
		if result != nil {
			if err := json.Unmarshal(resp.Result, result); err != nil {
				return fmt.Errorf("decoding result of %s: %w", method, err)
			}
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
		return ErrClosed
	}
}

func (c *Conn) deliver(r *Response) bool {
	c.mu.Lock()
	ch, ok := c.pending[idKey(r.ID)]
	c.mu.Unlock()
	if ok {
		ch <- r
	}
	return ok
}
