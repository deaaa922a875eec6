package rpc

import (
	"context"
	"net"
	"sync"
)

// batchWriter is a Writer that can write several messages with one write
// to the transport (SendBatch).
type batchWriter interface {
	WriteBatch(ctx context.Context, msgs [][]byte) error
}

// CorkConn is a net.Conn whose writes can be held back and then written
// together: between Cork and Uncork every Write is appended to a buffer,
// and Uncork writes the buffer with one Write to the connection. A
// WebSocket server hands it to the WebSocket library in place of the
// hijacked connection (see NewHijackedWebSocketFramer), so that the library
// still frames each message while several messages leave in one write(2).
// Writes outside a cork pass through; they and Uncork's write are
// serialised, so a control frame the library writes meanwhile (a pong)
// lands whole before or after the batch, or inside it between messages.
type CorkConn struct {
	net.Conn
	mu     sync.Mutex // serialises writes to Conn and guards corked and buf
	corked bool
	buf    []byte
}

// NewCorkConn wraps c.
func NewCorkConn(c net.Conn) *CorkConn { return &CorkConn{Conn: c} }

// Write writes p, or appends it to the batch while corked.
func (c *CorkConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.corked {
		c.buf = append(c.buf, p...)
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// Cork starts holding writes back.
func (c *CorkConn) Cork() {
	c.mu.Lock()
	c.corked = true
	c.mu.Unlock()
}

// Uncork writes what was held back with one Write and lets writes pass
// through again. The buffer is kept for the next batch unless it grew
// large.
func (c *CorkConn) Uncork() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.corked = false
	if len(c.buf) == 0 {
		return nil
	}
	_, err := c.Conn.Write(c.buf)
	c.buf = c.buf[:0]
	if cap(c.buf) > 64<<10 {
		c.buf = nil
	}
	return err
}
