// The request registry: requests received and not yet answered (each is
// answered once), and our own calls waiting for their response.

package rpc

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
)

// inbound is one request received and not yet answered.
type inbound struct {
	id   ID
	done chan struct{} // strictly serial mode: closed once the answer is written
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
	done := c.allRead && c.answering == 0 && len(c.inflight) == 0
	c.mu.Unlock()
	if done {
		c.answerOnce.Do(func() { close(c.answeredC) })
	}
}

func idKey(id ID) string { return string(id.AppendJSON(nil)) }

// Abandon drops the unanswered request id without answering it, now or
// when the connection ends: the client cancelled it (MCP
// notifications/cancelled, after which the receiver should not respond).
// A later Respond for id writes nothing. It reports whether such a request
// was pending (false: answered already, never received, or the connection
// is ending).
func (c *Conn) Abandon(id ID) bool {
	in, ok := c.claim(id)
	if ok {
		c.answered(in)
	}
	return ok
}

// Call sends a request and waits for its response, decoding the result into
// result (which may be nil). Params are marshalled by encoding/json, or
// sent verbatim when they are a json.RawMessage. A wire error comes back
// as *Error.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	return c.CallWithID(ctx, method, func(ID) any { return params }, result)
}

// CallWithID is Call with the params built from the request's id (MCP's
// progressToken repeats it). params runs once, before the request is sent.
func (c *Conn) CallWithID(ctx context.Context, method string, params func(id ID) any, result any) error {
	p, err := c.send(ctx, method, params)
	if err != nil {
		return err
	}
	return p.Await(ctx, result)
}

// Pending is a request sent by Start whose response has not been taken.
// Exactly one Await (or Abandon) releases it.
type Pending struct {
	c      *Conn
	method string
	key    string
	ch     chan *Response
}

// Start sends a request and returns once it is written, without waiting for
// the response: a request sent after Start returns is written after this
// one. Await takes the response.
func (c *Conn) Start(ctx context.Context, method string, params any) (*Pending, error) {
	return c.send(ctx, method, func(ID) any { return params })
}

func (c *Conn) send(ctx context.Context, method string, params func(id ID) any) (*Pending, error) {
	n := c.nextID.Add(1)
	if c.opts.CallIDsFromZero {
		n--
	}
	id := Int64ID(n)
	p := &Pending{c: c, method: method, key: idKey(id), ch: make(chan *Response, 1)}
	c.mu.Lock()
	c.pending[p.key] = p.ch
	c.mu.Unlock()
	b, err := c.requestFrame(id, method, params(id))
	if err == nil {
		err = c.Send(ctx, b, false)
	}
	if err != nil {
		p.Abandon()
		return nil, err
	}
	return p, nil
}

// Await waits for the response and decodes its result into result (which
// may be nil), as Call does; it returns ErrClosed when the connection ends
// first. It releases p.
func (p *Pending) Await(ctx context.Context, result any) error {
	defer p.Abandon()
	select {
	case resp := <-p.ch:
		if resp.Error != nil {
			return resp.Error
		}
		if result != nil {
			if err := json.Unmarshal(resp.Result, result); err != nil {
				return fmt.Errorf("decoding result of %s: %w", p.method, err)
			}
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-p.c.done:
		return ErrClosed
	}
}

// Abandon forgets the request: a response that comes later is dropped
// (see deliver).
func (p *Pending) Abandon() {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	if _, waiting := p.c.pending[p.key]; !waiting {
		return // answered: its response was taken
	}
	delete(p.c.pending, p.key)
	if len(p.c.abandoned) == maxAbandoned {
		p.c.abandoned = append(p.c.abandoned[:0], p.c.abandoned[1:]...)
	}
	p.c.abandoned = append(p.c.abandoned, p.key)
}

// maxAbandoned bounds the calls a Conn remembers as given up: a peer that
// never answers them costs no more than this.
const maxAbandoned = 1024

// deliver hands a response to the call waiting for it and reports whether
// the response belongs to one of our calls: a call still waiting, or one
// given up (Abandon), whose late response is dropped. A response to an id
// never sent is not ours.
func (c *Conn) deliver(r *Response) bool {
	key := idKey(r.ID)
	c.mu.Lock()
	ch, ok := c.pending[key]
	if ok {
		delete(c.pending, key) // a call gets one response
	} else if i := slices.Index(c.abandoned, key); i >= 0 {
		c.abandoned = slices.Delete(c.abandoned, i, i+1)
		c.mu.Unlock()
		c.log.Debug("response to an abandoned call; dropped", "id", r.ID.String())
		return true
	}
	c.mu.Unlock()
	if ok {
		ch <- r
	}
	return ok
}
