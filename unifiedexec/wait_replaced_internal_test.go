package unifiedexec

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/codexec/codex/rpc"
)

// TestWaitReplacedWakesOnChange: a call whose connection ended waits,
// without polling, until the monitor replaces the connection, the client
// fails, or Close marks it closed, and not before.
func TestWaitReplacedWakesOnChange(t *testing.T) {
	for _, change := range []struct {
		name string
		do   func(c *Client, next *rpc.Conn)
	}{
		{"replaced", func(c *Client, next *rpc.Conn) {
			c.mu.Lock()
			c.conn, c.ready = nil, make(chan struct{})
			c.changedLocked()
			c.mu.Unlock()
			c.setConn(next)
		}},
		{"failed", func(c *Client, _ *rpc.Conn) { c.fail(errors.New("gone")) }},
		{"closed", func(c *Client, _ *rpc.Conn) {
			c.mu.Lock()
			c.closed = true
			c.changedLocked()
			c.mu.Unlock()
		}},
	} {
		t.Run(change.name, func(t *testing.T) {
			c := &Client{procs: map[string]*Process{}, log: slog.New(slog.DiscardHandler), ready: make(chan struct{}), changed: make(chan struct{})}
			old, next := closedConn(t, c), closedConn(t, c)
			c.setConn(old)
			done := make(chan struct{})
			go func() { c.waitReplaced(context.Background(), old); close(done) }()
			select {
			case <-done:
				t.Fatal("waitReplaced returned while the lost connection was still current")
			case <-time.After(50 * time.Millisecond):
			}
			change.do(c, next)
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("waitReplaced did not wake up")
			}
		})
	}
}

// closedConn is a connection of c whose transport has ended.
func closedConn(t *testing.T, c *Client) *rpc.Conn {
	r, w := io.Pipe()
	conn := c.newConn(rpc.NewStdioFramer(r, w, w, "test", 1<<20), false)
	_ = conn.Close()
	conn.Wait()
	t.Cleanup(func() { _ = r.Close() })
	return conn
}
