package wsserve_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/codexec/codex/internal/rpctest"
	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wsserve"
)

// A connection upgraded while Serve is closing is closed and waited for:
// Serve does not return before it, and the client sees the close.
func TestServeClosesLateUpgrade(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	entered := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	srv := &wsserve.WebSocketServer{MaxMessage: 1 << 20, PingInterval: -1, Conn: rpc.Options{Bind: func(*rpc.Conn) rpc.Handler {
		once.Do(func() { close(entered) })
		<-release
		return nil
	}}}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer dcancel()
	type dialed struct {
		ws  *websocket.Conn
		err error
	}
	dc := make(chan dialed, 1)
	go func() {
		ws, _, err := websocket.Dial(dctx, "ws://"+ln.Addr().String(), &websocket.DialOptions{HTTPClient: &http.Client{}})
		dc <- dialed{ws, err}
	}()
	<-entered
	cancel()
	select {
	case <-served:
		close(release)
		t.Fatal("Serve returned while a connection was being upgraded")
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	d := <-dc
	if d.err == nil {
		if _, _, err := d.ws.Read(dctx); err == nil || dctx.Err() != nil {
			t.Fatalf("late connection not closed: %v", err)
		}
		d.ws.CloseNow()
	}
	select {
	case <-served:
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
}

// TestScenarioWebSocketServerLabel: WebSocketServer labels a connection
// with LabelPrefix (default "websocket ") and the peer address, which
// Options.ParseError receives.
func TestScenarioWebSocketServerLabel(t *testing.T) {
	for _, c := range []struct{ prefix, want string }{
		{"", "websocket pipe"},
		{"exec-server websocket ", "exec-server websocket pipe"},
	} {
		t.Run(c.want, func(t *testing.T) {
			l := rpctest.NewPipeListener()
			labels := make(chan string, 1)
			srv := &wsserve.WebSocketServer{MaxMessage: maxMsg, PingInterval: -1, LabelPrefix: c.prefix, Conn: rpc.Options{
				ParseError: func(label string, _ bool, _ error) string { labels <- label; return "bad" },
			}}
			ctx, cancel := context.WithCancel(context.Background())
			served := make(chan error, 1)
			go func() { served <- srv.Serve(ctx, l) }()
			defer func() {
				cancel()
				<-served
			}()
			ws := rpctest.DialWS(t, l)
			defer ws.CloseNow()
			raw := rpc.NewWebSocketFramer(ws, "raw", maxMsg)
			rpctest.WriteRaw(t, raw, `nope`)
			if msg := rpctest.ReadRaw(t, raw); !strings.Contains(string(msg), `"message":"bad"`) {
				t.Fatalf("answer %s", msg)
			}
			if got := <-labels; got != c.want {
				t.Fatalf("label %q, want %q", got, c.want)
			}
		})
	}
}

const maxMsg = 1 << 20
