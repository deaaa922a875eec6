// Requests and responses of the bench Client: frames sent, responses awaited
// by id, and the wire error type.

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/coder/websocket"
)

// RPCError is a JSON-RPC error object sent by a server.
type RPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("rpc error %d: %s", e.Code, e.Message) }

// Response is a server's answer to one request, stamped with the time its
// frame was fully read.
type Response struct {
	Result json.RawMessage
	Err    *RPCError
	At     time.Time
}

// request is the wire form of a JSON-RPC request (no "jsonrpc" member).
type request struct {
	ID     int64  `json:"id"`
	Method string `json:"method"`
	Params any    `json:"params"`
}

// notification is the wire form of a client notification.
type notification struct {
	Method string `json:"method"`
	Params any    `json:"params"`
}

// Send writes a request and returns the channel its response will arrive on
// and the time the frame was handed to the socket.
func (c *Client) Send(ctx context.Context, method string, params any) (<-chan *Response, time.Time, error) {
	id := c.nextID.Add(1)
	data, err := json.Marshal(request{ID: id, Method: method, Params: params})
	if err != nil {
		return nil, time.Time{}, err
	}
	ch := make(chan *Response, 1)
	c.mu.Lock()
	if c.readErr != nil {
		err := c.readErr
		c.mu.Unlock()
		return nil, time.Time{}, fmt.Errorf("connection is down: %w", err)
	}
	c.pending[id] = ch
	c.mu.Unlock()
	sent := time.Now()
	if err := c.conn.Write(ctx, websocket.MessageText, data); err != nil {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return nil, sent, fmt.Errorf("write %s: %w", method, err)
	}
	return ch, sent, nil
}

// CallRaw sends a request whose params are the JSON text params, as
// they are (no encoding in the client: the large rows measure the server),
// and waits for its result.
func (c *Client) CallRaw(ctx context.Context, method string, params []byte) (*Response, error) {
	id := c.nextID.Add(1)
	data := make([]byte, 0, len(params)+64)
	data = fmt.Appendf(data, `{"id":%d,"method":%q,"params":`, id, method)
	data = append(append(data, params...), '}')
	ch := make(chan *Response, 1)
	c.mu.Lock()
	if c.readErr != nil {
		err := c.readErr
		c.mu.Unlock()
		return nil, fmt.Errorf("connection is down: %w", err)
	}
	c.pending[id] = ch
	c.mu.Unlock()
	if err := c.conn.Write(ctx, websocket.MessageText, data); err != nil {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return nil, fmt.Errorf("write %s: %w", method, err)
	}
	r, err := c.Await(ctx, ch)
	if err != nil {
		return nil, err
	}
	if r.Err != nil {
		return r, r.Err
	}
	return r, nil
}

// Await waits for a response from Send.
func (c *Client) Await(ctx context.Context, ch <-chan *Response) (*Response, error) {
	select {
	case r, ok := <-ch:
		if !ok {
			c.mu.Lock()
			err := c.readErr
			c.mu.Unlock()
			return nil, fmt.Errorf("connection lost: %w", err)
		}
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Call sends a request and waits for its result; an error response becomes
// an *RPCError.
func (c *Client) Call(ctx context.Context, method string, params any) (*Response, error) {
	ch, _, err := c.Send(ctx, method, params)
	if err != nil {
		return nil, err
	}
	r, err := c.Await(ctx, ch)
	if err != nil {
		return nil, err
	}
	if r.Err != nil {
		return r, r.Err
	}
	return r, nil
}

// Notify sends a client notification.
func (c *Client) Notify(ctx context.Context, method string, params any) error {
	data, err := json.Marshal(notification{Method: method, Params: params})
	if err != nil {
		return err
	}
	return c.conn.Write(ctx, websocket.MessageText, data)
}
