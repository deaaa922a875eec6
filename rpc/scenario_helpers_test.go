package rpc_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/codexec/codex/internal/rpctest"
	"github.com/codexec/codex/rpc"
)

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
	l := rpctest.NewPipeListener()
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
	client := rpctest.DialWS(t, l)
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

func callCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}
