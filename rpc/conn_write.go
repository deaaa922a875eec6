// The write side of a Conn: answers, notifications and requests are
// encoded to frames here and written by Send, one frame at a time.

package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
)

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
	if !c.sendFrame(c.answerFrame(id, result, err)) {
		return ErrClosed
	}
	return nil
}

// RespondWhenWritable is Respond with the answer built by build only once
// the connection may write it, under the right to write: an answer that
// waits for a peer that does not read holds nothing but build, however
// large the result would be. The connection writes nothing else while
// build runs, so build must be quick and must not send on the connection.
// A StreamedResult is encoded in memory.
func (c *Conn) RespondWhenWritable(id ID, build func() (any, error)) error {
	in, ok := c.claim(id)
	if !ok {
		return ErrClosed
	}
	defer c.answered(in)
	return c.write(c.ctx, func() error {
		result, err := build()
		return c.f.Write(c.ctx, c.answerFrame(id, result, err))
	})
}

// answerFrame encodes the answer to id: result, or err when it is not nil.
func (c *Conn) answerFrame(id ID, result any, err error) []byte {
	if err != nil {
		return c.errorFrame(id, ToWire(err))
	}
	if sr, ok := result.(StreamedResult); ok {
		var buf bytes.Buffer
		if err := sr.WriteJSON(&buf); err != nil {
			return c.errorFrame(id, Errorf(CodeInternalError, "failed to encode result: %v", err))
		}
		result = json.RawMessage(buf.Bytes())
	}
	frame, err := c.resultFrame(id, result)
	if err != nil {
		return c.errorFrame(id, Errorf(CodeInternalError, "failed to encode result: %v", err))
	}
	return frame
}

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
	return c.write(ctx, func() error { return c.f.Write(c.ctx, frame) })
}

// SendBatch is Send for several encoded messages written in order with
// nothing between them; where the transport allows (stdio, a WebSocket
// server connection over a CorkConn) they leave in one write. With pooled,
// every buffer is returned to the frame pool afterwards.
func (c *Conn) SendBatch(ctx context.Context, frames [][]byte, pooled bool) error {
	if pooled {
		defer func() {
			for _, f := range frames {
				ReleaseFrame(f)
			}
		}()
	}
	return c.write(ctx, func() error { return c.writeFrames(frames) })
}

// writeFrames writes frames in order, in one write where the framer
// allows. The caller holds the write token.
func (c *Conn) writeFrames(frames [][]byte) error {
	if bw, ok := c.f.(batchWriter); ok {
		return bw.WriteBatch(c.ctx, frames)
	}
	for _, f := range frames {
		if err := c.f.Write(c.ctx, f); err != nil {
			return err
		}
	}
	return nil
}

// write runs w, which writes to the framer, holding the write token. A
// failed write ends the connection.
func (c *Conn) write(ctx context.Context, w func() error) error {
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
	err := w()
	c.wtok <- struct{}{}
	if err != nil {
		if c.ctx.Err() == nil {
			c.log.Debug("write failed", "error", err)
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
		p, ok := params.(json.RawMessage) // sent verbatim, as results are
		if !ok {
			var err error
			if p, err = json.Marshal(params); err != nil {
				return nil, fmt.Errorf("encoding params of %s: %w", method, err)
			}
		}
		b = append(b, `,"params":`...)
		b = append(b, p...)
	}
	return append(b, '}'), nil
}
