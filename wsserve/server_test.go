package wsserve_test

import (
	"bufio"
	"context"
	"io"
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

// The server pings every PingInterval while the connection lives: a raw
// client that never answers sees ping frames (opcode 9) come again and
// again, and the connection stays up (a missing pong is ignored).
func TestServerPings(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &wsserve.WebSocketServer{MaxMessage: 1 << 20, PingInterval: 20 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	defer func() {
		cancel()
		<-served
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	req := "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
	if _, err := nc.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(nc)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	pings := 0
	for pings < 3 {
		var h [2]byte
		if _, err := io.ReadFull(br, h[:]); err != nil {
			t.Fatalf("after %d pings: %v", pings, err)
		}
		n := int(h[1] & 0x7f) // a server's frames are not masked; control payloads are < 126
		if _, err := io.CopyN(io.Discard, br, int64(n)); err != nil {
			t.Fatal(err)
		}
		if op := h[0] & 0x0f; op != 0x9 {
			t.Fatalf("frame opcode %#x, want a ping (0x9)", op)
		}
		pings++
	}
}
