// Package rpctest holds what the tests of rpc and wsserve share: a
// net.Listener whose connections are in-memory net.Pipe ends, a WebSocket
// client dialled over it, and raw reads and writes on a framer with a
// deadline. Only tests import it.
package rpctest

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/codexec/codex/rpc"
)

// PipeListener is a net.Listener whose connections are net.Pipe ends
// handed over by Dial.
type PipeListener struct {
	conns     chan net.Conn
	done      chan struct{}
	closeOnce sync.Once
}

// NewPipeListener returns a listener with no connection yet.
func NewPipeListener() *PipeListener {
	return &PipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

// Accept returns the server end of the next pipe Dial makes.
func (l *PipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close makes Accept and Dial fail with net.ErrClosed.
func (l *PipeListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return nil
}

// Addr is the address "pipe" of network "pipe".
func (l *PipeListener) Addr() net.Addr { return pipeAddr{} }

// Dial returns the client end of a new pipe whose server end Accept
// returns; it has the signature of http.Transport.DialContext.
func (l *PipeListener) Dial(ctx context.Context, _, _ string) (net.Conn, error) {
	c, s := net.Pipe()
	select {
	case l.conns <- s:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// DialWS opens a WebSocket client over l within 10 s; the server's end
// is whatever serves l.
func DialWS(t testing.TB, l *PipeListener) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hc := &http.Client{Transport: &http.Transport{DialContext: l.Dial}}
	ws, _, err := websocket.Dial(ctx, "ws://pipe/", &websocket.DialOptions{HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	hc.CloseIdleConnections()
	return ws
}

// ReadRaw reads one message from the raw framer f within 5 s.
func ReadRaw(t testing.TB, f rpc.Framer) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b, err := f.Read(ctx)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return b
}

// WriteRaw writes msg as one message to the raw framer f within 5 s.
func WriteRaw(t testing.TB, f rpc.Framer, msg string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := f.Write(ctx, []byte(msg)); err != nil {
		t.Fatalf("write: %v", err)
	}
}
