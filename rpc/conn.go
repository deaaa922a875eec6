// The Conn type, its options and its lifecycle: start, Close, Wait, and
// the shutdown that answers what is left unanswered.

package rpc

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"log/slog"
)

// Options configure a Conn. The zero value is usable: no handler (every
// request gets -32601) and ordered scheduling.
type Options struct {
	// Bind builds the connection's handler. Nil means no handler.
	Bind func(*Conn) Handler
	// Logger receives connection-level logs (log/slog, so that a client
	// needs no logging library; the server bridges its zap logger with
	// internal/zapslog). Nil means no logs.
	Logger *slog.Logger
	// Concurrency selects request scheduling: 0 runs requests in arrival
	// order, lets a Preempter answer control requests at once and lets
	// handlers answer asynchronously; 1 runs strictly one request at a time
	// (an asynchronous answer is awaited before the next request); N >= 2 runs
	// up to N requests at once, answering in completion order.
	Concurrency int
	// JSONRPC adds "jsonrpc":"2.0" to every message sent (some peers, such
	// as MCP, require it).
	JSONRPC bool
	// StrictJSONRPC checks every inbound message as JSON-RPC 2.0 (MCP):
	// input that is not JSON is answered -32700 and anything that is not
	// one message with "jsonrpc":"2.0" (a batch, a bad id, a missing
	// member) -32600, with the message's id when it could be read and null
	// otherwise; ParseError is not used. A response whose id matches no
	// outstanding call is dropped instead of ending the connection (the
	// peer may answer a call whose context ended). The connection carries
	// on in every case.
	StrictJSONRPC bool
	// CallIDsFromZero numbers the connection's own calls 0, 1, 2, …
	// instead of 1, 2, 3, ….
	CallIDsFromZero bool
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
	// the generic decoding, errors included. It must not retain data: the
	// framers of this package then read the next message into the same
	// memory (the generic decoding copies what it keeps). Nil means every
	// message is decoded generically.
	Predecode func(data []byte) (method string, decoded any)
	// HoldAtEOF keeps the connection up at a clean end of input (io.EOF
	// from the framer, as when a stdio peer closes its end): the Conn
	// reads no more and closes InputEnded, the requests already read run
	// to their answers (Answered is closed once they all have one), and the
	// owner ends the connection with Close when it sees fit. Without it,
	// the end of input ends the connection at once, answering what is
	// left with an error.
	HoldAtEOF bool
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
	log    *slog.Logger
	h      Handler
	ctx    context.Context // cancelled when the connection ends
	cancel context.CancelFunc

	wtok      chan struct{} // holds one token: the right to write
	joined    joinedSends   // SendJoined's groups waiting for the token
	inq       chan queued   // drained by the handler goroutine only
	blocking  bool          // reads block an OS thread (see yieldToHandler)
	stopWrite chan struct{} // closed when no more messages may be written
	done      chan struct{} // closed when the connection has ended
	closeOnce sync.Once
	wg        sync.WaitGroup // every goroutine the Conn owns

	nextID    atomic.Int64
	mu        sync.Mutex
	pending   map[string]chan *Response // guarded by mu: our outgoing calls
	abandoned []string                  // guarded by mu: our calls given up unanswered, oldest first (at most maxAbandoned): a late response is dropped
	inflight  map[string][]*inbound     // guarded by mu: requests not yet answered, by id
	answering int                       // guarded by mu: claimed answers being written
	ending    bool                      // guarded by mu: shutdown began; no new claims
	swept     bool                      // guarded by mu: the unanswered were answered by shutdown
	drained   chan struct{}             // guarded by mu: closed when answering drops to 0 after ending
	allRead   bool                      // guarded by mu: input ended and every message read was handed to the handler

	inputEnded chan struct{} // closed at a clean end of input with HoldAtEOF
	answeredC  chan struct{} // closed once allRead and every request read was answered
	answerOnce sync.Once
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

		inputEnded: make(chan struct{}),
		answeredC:  make(chan struct{}),
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if b, ok := f.(blockingReader); ok {
		c.blocking = b.blocksThread()
	}
	if l, ok := f.(lender); ok && opts.Predecode != nil {
		l.lend()
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	if opts.Bind != nil {
		c.h = opts.Bind(c)
	}
	c.wtok <- struct{}{}
	c.wg.Add(3)
	go c.readLoop()
	go c.handleLoop()
	// Whoever cancels the context (a failed write, Close) ends the
	// connection through here, on a goroutine Wait covers, started only
	// then: an idle connection holds no goroutine for it.
	context.AfterFunc(c.ctx, func() {
		defer c.wg.Done()
		c.shutdown(nil, ending{within: CloseWithin})
	})
	return c
}

// CloseWithin bounds Close, and a listener's close of its connections by
// default: answers being written and a peer that does not read get this
// long in all before the transport is closed under them.
const CloseWithin = 2 * time.Second

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

// Every runs f every d until the connection ends, each run on a goroutine
// the connection owns (Wait waits for a run under way), with the
// connection's context; between runs it holds no goroutine. Call it as Go
// is called.
func (c *Conn) Every(d time.Duration, f func(ctx context.Context)) {
	var (
		mu      sync.Mutex
		t       *time.Timer
		stopped bool
		run     func()
	)
	arm := func() { // mu held
		c.wg.Add(1)
		t = time.AfterFunc(d, run)
	}
	run = func() {
		defer c.wg.Done()
		if c.ctx.Err() != nil {
			return
		}
		f(c.ctx)
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			arm()
		}
	}
	mu.Lock()
	arm()
	mu.Unlock()
	c.AtEnd(func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		if t.Stop() {
			c.wg.Done() // the run that will not come
		}
	})
}

// AtEnd runs f once the connection ends (its context is cancelled), on a
// goroutine the connection owns, started only then. Call it as Go is
// called.
func (c *Conn) AtEnd(f func()) {
	c.wg.Add(1)
	context.AfterFunc(c.ctx, func() {
		defer c.wg.Done()
		f()
	})
}

// Close ends the connection: a message being written gets up to two seconds
// to finish, then the transport is closed and every context is cancelled.
// It does not wait for goroutines; use Wait.
func (c *Conn) Close() error {
	c.shutdown(nil, ending{within: CloseWithin})
	return nil
}

// CloseGoingAway ends the connection as Close does, in at most d: the
// requests still unanswered get their error answer and a WebSocket
// transport is closed with status 1001 (going away), telling the peer to
// reconnect elsewhere at once. On a WebSocket framed by
// NewHijackedWebSocketFramer over a CorkConn (as a listener's are) a write
// to the peer, the close included, fails once the peer has taken nothing
// of it for d, so a peer that does not read holds the call up about d; one
// that reads gets the answers and the 1001 within CloseWithin, however
// long past d a loaded machine takes to write them.
func (c *Conn) CloseGoingAway(d time.Duration) {
	c.shutdown(nil, ending{goingAway: true, within: d})
}

// InputEnded returns a channel closed at a clean end of input when
// Options.HoldAtEOF is set (never otherwise).
func (c *Conn) InputEnded() <-chan struct{} { return c.inputEnded }

// Answered returns a channel closed once the input ended (HoldAtEOF) and
// every request read before its end has been answered; notifications read
// before it have been handled too.
func (c *Conn) Answered() <-chan struct{} { return c.answeredC }

// PeerGoingAway reports whether the peer ended the connection with the
// WebSocket close status 1001 (going away): a server that shuts down.
func (c *Conn) PeerGoingAway() bool {
	g, ok := c.f.(interface{ peerGoingAway() bool })
	return ok && g.peerGoingAway()
}

// ending is how shutdown ends the transport.
type ending struct {
	tooLarge  bool          // WebSocket close 1009 (message too big)
	goingAway bool          // WebSocket close 1001 (going away)
	within    time.Duration // the bound of the whole shutdown
}

// bounder is implemented by framers whose writes and close can be bounded
// (a WebSocket from NewHijackedWebSocketFramer (wsserve.WebSocketServer)):
// from bound on, a peer that does not read holds them up for within at
// most. It reports whether a write to a peer that reads goes on until
// limit (a CorkConn's BoundStalls) rather than failing at within.
type bounder interface {
	bound(within time.Duration, limit time.Time) bool
}

// Wait blocks until every goroutine owned by the connection has returned.
func (c *Conn) Wait() { c.wg.Wait() }

// shutdown ends the connection once. final, if not nil, is written last,
// after an error response to every request still unanswered. Answers
// already being written and a sender stuck on a peer that does not read are
// given how.within in all before the transport is closed under them (on a
// bounder, a peer that reads is given up to CloseWithin).
func (c *Conn) shutdown(final []byte, how ending) {
	c.closeOnce.Do(func() {
		now := time.Now()
		// writeBy bounds the answers being written, the last ones and the
		// close. Where writes are bounded by stalls, a writer gives up by
		// itself on a peer that has stopped reading, so a peer that reads,
		// or a writer the loaded machine has not run yet, is given up to
		// CloseWithin.
		writeBy := now.Add(how.within)
		if b, ok := c.f.(bounder); ok {
			limit := now.Add(max(how.within, CloseWithin))
			if b.bound(how.within, limit) {
				writeBy = limit
			}
		}
		timer := time.NewTimer(writeBy.Sub(now))
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
			ctx, cancel := context.WithDeadline(context.Background(), writeBy)
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
		if g, ok := c.f.(interface{ closeGoingAway() error }); ok && how.goingAway {
			_ = g.closeGoingAway()
		} else {
			_ = c.f.Close(how.tooLarge)
		}
		c.cancel()
		close(c.done)
	})
}
