// The read side of a Conn: the read loop, dispatch of requests to the
// handler goroutine(s) in the configured order, and finishing a request.

package rpc

import (
	"context"
	"errors"
	"io"
	"runtime"
	"runtime/debug"
)

// queued is a request waiting for the handler goroutine, or the mark of
// the end of input (eof, with HoldAtEOF).
type queued struct {
	req *Request
	in  *inbound // nil for a notification
	eof bool
}

// endOfInput is the end of the read loop at a clean end of input with
// HoldAtEOF: InputEnded is closed, and the end is queued behind the
// messages read, so that the handler goroutine marks every one of them
// handed over (see allHandled).
func (c *Conn) endOfInput() {
	close(c.inputEnded)
	select {
	case c.inq <- queued{eof: true}:
	case <-c.ctx.Done():
	}
}

// allHandled runs on the handler goroutine when it reaches the end of
// input: from now on, the connection is answered once nothing is in
// flight.
func (c *Conn) allHandled() {
	c.mu.Lock()
	c.allRead = true
	done := len(c.inflight) == 0 && c.answering == 0
	c.mu.Unlock()
	if done {
		c.answerOnce.Do(func() { close(c.answeredC) })
	}
}

func (c *Conn) readLoop() {
	defer c.wg.Done()
	for {
		data, err := c.f.Read(c.ctx)
		if err != nil {
			if errors.Is(err, ErrTooLarge) {
				msg := c.errorFrame(Int64ID(-1), c.parseError(true, err))
				c.shutdown(msg, ending{tooLarge: true, within: CloseWithin})
				return
			}
			if errors.Is(err, io.EOF) && c.opts.HoldAtEOF && c.ctx.Err() == nil {
				c.endOfInput()
				return
			}
			if !errors.Is(err, io.EOF) && c.ctx.Err() == nil {
				c.log.Debug("read ended", "error", err)
			}
			c.shutdown(nil, ending{within: CloseWithin})
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
		msg, id, werr := c.decode(data)
		if werr != nil {
			if !c.sendFrame(c.errorFrame(id, werr)) {
				return
			}
			continue
		}
		switch m := msg.(type) {
		case *Response:
			if !c.deliver(m) {
				if c.opts.StrictJSONRPC {
					c.log.Debug("response to an unknown request; dropped", "id", m.ID.String())
					continue
				}
				c.log.Debug("response to an unknown request; closing", "id", m.ID.String())
				c.shutdown(nil, ending{within: CloseWithin})
				return
			}
		case *Request:
			if !c.dispatch(m) {
				return
			}
		}
	}
}

// decode classifies one inbound message. A failure returns the error to
// answer and its id: -1 with the ParseError wording, or the strict codes
// of decodeStrict.
func (c *Conn) decode(data []byte) (any, ID, *Error) {
	if c.opts.StrictJSONRPC {
		return decodeStrict(data)
	}
	msg, err := DecodeMessage(data)
	if err != nil {
		return nil, Int64ID(-1), c.parseError(false, err)
	}
	return msg, ID{}, nil
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
		c.yieldToHandler()
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
			c.handleLeftNotifications()
			return
		}
		if q.eof {
			c.allHandled()
			continue
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

// handleLeftNotifications runs the handler for the notifications read
// before the connection ended and still queued: a peer's last messages
// (a process's exit and close, then a WebSocket close 1001) arrive
// together, and the end must not overtake them. Requests left are not
// run: nothing can answer them now.
func (c *Conn) handleLeftNotifications() {
	for {
		select {
		case q := <-c.inq:
			if !q.eof && q.req.IsNotification() {
				c.handleOne(q)
			}
		default:
			return
		}
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
			c.log.Error("handler panic", "method", Clip(req.Method), "panic", p, "stack", string(debug.Stack()))
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
		c.shutdown(final, ending{within: CloseWithin})
		return
	}
	if req.IsNotification() {
		if err != nil {
			c.log.Debug("notification failed", "method", Clip(req.Method), "error", err)
		}
		return
	}
	_ = c.Respond(req.ID, res, err)
}

// blockingReader is implemented by framers whose Read blocks the calling
// OS thread in a system call rather than parking the goroutine in the
// netpoller (stdin is a blocking descriptor shared with the parent, so it
// is read that way).
type blockingReader interface {
	blocksThread() bool
}

// blocksThread reports true: the stdio framer reads its reader directly,
// and stdin is not registered with the netpoller.
func (f *stdioFramer) blocksThread() bool { return true }

// yieldToHandler lets the handler goroutine, just woken by a direct
// hand-off, run on this thread at once. Otherwise it waits in this P's
// queue while the read loop blocks the thread in its next read, until
// another thread is woken to take it over: 10–20 µs per request on a busy
// host. The read loop goes to the global queue meanwhile; the order of
// requests is unchanged, as they are already in c.inq.
func (c *Conn) yieldToHandler() {
	if c.blocking && len(c.inq) == 0 {
		runtime.Gosched()
	}
}
