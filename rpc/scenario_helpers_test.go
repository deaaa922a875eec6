package rpc_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/codexec/codex/rpc"
)

// pipeListener is a net.Listener whose connections are net.Pipe ends
// handed over by dial.
type pipeListener struct {
	conns     chan net.Conn
	done      chan struct{}
	closeOnce sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

// dial returns the client end of a new pipe whose server end Accept returns.
func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
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

// dialWS opens a WebSocket client over l.
func dialWS(t *testing.T, l *pipeListener) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hc := &http.Client{Transport: &http.Transport{DialContext: l.dial}}
	ws, _, err := websocket.Dial(ctx, "ws://pipe/", &websocket.DialOptions{HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	hc.CloseIdleConnections()
	return ws
}

// transport makes two framers connected over net.Pipe.
type transport struct {
	name string
	pair func(t *testing.T) (a, b rpc.Framer)
}

var transports = []transport{
	{"stdio", stdioPair},
	{"websocket", wsPair},
}

const maxMsg = 1 << 20

func stdioPair(t *testing.T) (rpc.Framer, rpc.Framer) {
	a, b := net.Pipe()
	return rpc.NewStdioFramer(a, a, a, "A", maxMsg), rpc.NewStdioFramer(b, b, b, "B", maxMsg)
}

// wsPair upgrades one pipe connection through an http.Server, which is
// shut down before the test ends.
func wsPair(t *testing.T) (rpc.Framer, rpc.Framer) {
	l := newPipeListener()
	accepted := make(chan *websocket.Conn, 1)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			t.Error(err)
			return
		}
		accepted <- ws
	})}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	t.Cleanup(func() {
		_ = srv.Close()
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	client := dialWS(t, l)
	server := <-accepted
	return rpc.NewWebSocketFramer(server, "A", maxMsg), rpc.NewWebSocketFramer(client, "B", maxMsg)
}

// startConn serves f with opts and ends it when the test ends.
func startConn(t *testing.T, f rpc.Framer, opts rpc.Options) *rpc.Conn {
	c := rpc.NewConn(f, opts)
	t.Cleanup(func() {
		_ = c.Close()
		c.Wait()
	})
	return c
}

// readRaw reads one message from the raw framer f within 5 s.
func readRaw(t *testing.T, f rpc.Framer) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b, err := f.Read(ctx)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return b
}

func writeRaw(t *testing.T, f rpc.Framer, msg string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := f.Write(ctx, []byte(msg)); err != nil {
		t.Fatalf("write: %v", err)
	}
}

func callCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}
