package rpc

import (
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
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
//
// Once BoundStalls is called, a write fails when the peer has taken none of
// it for the stall bound, and every write fails past the hard limit.
type CorkConn struct {
	net.Conn
	mu     sync.Mutex // serialises writes to Conn and guards corked and buf
	corked bool
	buf    []byte
	stall  atomic.Int64 // BoundStalls' stall bound in ns, 0 before it
	until  atomic.Int64 // BoundStalls' hard limit in Unix ns
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
	return c.write(p)
}

// BoundStalls makes every write, the one under way included, fail once
// the peer has taken nothing of it for stall, and fail at until in any
// case. A peer that reads, however slowly or late the writer runs, gets
// what is written until then; one that has stopped reading holds a writer
// up for stall. Reads are not affected.
func (c *CorkConn) BoundStalls(stall time.Duration, until time.Time) {
	c.until.Store(until.UnixNano())
	c.stall.Store(int64(stall))
	_ = c.Conn.SetWriteDeadline(c.deadline())
}

// deadline is the deadline of a write that starts, or last made progress,
// now (BoundStalls).
func (c *CorkConn) deadline() time.Time {
	d := time.Now().Add(time.Duration(c.stall.Load()))
	if u := time.Unix(0, c.until.Load()); d.After(u) {
		return u
	}
	return d
}

// write writes p to Conn. Under BoundStalls a write cut by its deadline
// after some progress is given a fresh one and goes on.
func (c *CorkConn) write(p []byte) (int, error) {
	n := 0
	for {
		if c.stall.Load() != 0 {
			_ = c.Conn.SetWriteDeadline(c.deadline())
		}
		m, err := c.Conn.Write(p[n:])
		n += m
		if err == nil || m == 0 || c.stall.Load() == 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
			return n, err
		}
	}
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
	_, err := c.write(c.buf)
	c.buf = c.buf[:0]
	if cap(c.buf) > 64<<10 {
		c.buf = nil
	}
	return err
}
