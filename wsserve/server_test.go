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
			l := newPipeListener()
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
			ws := dialWS(t, l)
			defer ws.CloseNow()
			raw := rpc.NewWebSocketFramer(ws, "raw", maxMsg)
			writeRaw(t, raw, `nope`)
			if msg := readRaw(t, raw); !strings.Contains(string(msg), `"message":"bad"`) {
				t.Fatalf("answer %s", msg)
			}
			if got := <-labels; got != c.want {
				t.Fatalf("label %q, want %q", got, c.want)
			}
		})
	}
}

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

const maxMsg = 1 << 20

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
