package rpc_test

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/coder/websocket"

	"github.com/codexec/codex/internal/rpctest"
	"github.com/codexec/codex/rpc"
)

// countingConn counts the writes that reach the connection.
type countingConn struct {
	net.Conn
	writes atomic.Int64
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// corkHijacker hands websocket.Accept the hijacked connection wrapped in a
// counter and a CorkConn, as wsserve does (without the counter).
type corkHijacker struct {
	http.ResponseWriter
	count *countingConn
	cork  *rpc.CorkConn
}

func (h *corkHijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := h.ResponseWriter.(http.Hijacker).Hijack()
	if err != nil {
		return nil, nil, err
	}
	h.count = &countingConn{Conn: c}
	h.cork = rpc.NewCorkConn(h.count)
	rw.Writer.Reset(h.cork) // the server side of the library writes through rw.Writer
	return h.cork, rw, nil
}

// TestSendBatchOneWrite: a batch of messages on a WebSocket server
// connection over a CorkConn reaches the socket in one write, each still
// its own message, in order; single sends take a write each. Over stdio a
// batch is one write too.
func TestSendBatchOneWrite(t *testing.T) {
	l := rpctest.NewPipeListener()
	accepted := make(chan *corkHijacker, 1)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := &corkHijacker{ResponseWriter: w}
		ws, err := websocket.Accept(h, r, nil)
		if err != nil {
			t.Error(err)
			return
		}
		accepted <- h
		f := rpc.NewHijackedWebSocketFramer(ws, h.cork, "A", maxMsg)
		c := rpc.NewConn(f, rpc.Options{})
		defer c.Wait()
		ctx := r.Context()
		before := h.count.writes.Load()
		if err := c.SendBatch(ctx, [][]byte{[]byte(`{"method":"one"}`), []byte(`{"method":"two"}`), []byte(`{"method":"three"}`)}, false); err != nil {
			t.Error(err)
		}
		if n := h.count.writes.Load() - before; n != 1 {
			t.Errorf("a batch of 3 messages took %d writes, want 1", n)
		}
		before = h.count.writes.Load()
		for _, m := range []string{`{"method":"four"}`, `{"method":"five"}`} {
			if err := c.Send(ctx, []byte(m), false); err != nil {
				t.Error(err)
			}
		}
		if n := h.count.writes.Load() - before; n != 2 {
			t.Errorf("2 single sends took %d writes, want 2", n)
		}
		_ = c.Close()
	})}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	defer func() {
		_ = srv.Close()
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	}()
	client := rpctest.DialWS(t, l)
	<-accepted
	ctx := callCtx(t)
	for _, want := range []string{"one", "two", "three", "four", "five"} {
		_, msg, err := client.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(msg); got != `{"method":"`+want+`"}` {
			t.Fatalf("message %s: got %s", want, got)
		}
	}
	_ = client.CloseNow()
}

// countingWriter counts the writes that reach it.
type countingWriter struct {
	writes int
	lines  []byte
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	w.lines = append(w.lines, p...)
	return len(p), nil
}

// TestSendBatchStdioOneWrite: over stdio a batch is one line per message,
// in order, flushed with one write.
func TestSendBatchStdioOneWrite(t *testing.T) {
	inR, inW := net.Pipe()
	out := &countingWriter{}
	c := rpc.NewConn(rpc.NewStdioFramer(inR, out, inR, "stdio", maxMsg), rpc.Options{})
	defer func() {
		_ = inW.Close()
		_ = c.Close()
		c.Wait()
	}()
	if err := c.SendBatch(callCtx(t), [][]byte{[]byte(`{"a":1}`), []byte(`{"b":2}`)}, false); err != nil {
		t.Fatal(err)
	}
	if out.writes != 1 || string(out.lines) != "{\"a\":1}\n{\"b\":2}\n" {
		t.Fatalf("%d writes of %q, want 1 of two lines", out.writes, out.lines)
	}
}
