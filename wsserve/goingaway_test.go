package wsserve_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wsserve"
)

// bigHandler answers every request with a string (made once).
type bigHandler struct{ answer json.RawMessage }

func (h bigHandler) Handle(context.Context, *rpc.Request) (any, error) {
	return h.answer, nil
}

// slowConn is a client connection that waits a millisecond before each
// read (a peer that reads, slowly) and counts what it has read.
type slowConn struct {
	net.Conn
	read atomic.Int64
}

func (c *slowConn) Read(p []byte) (int, error) {
	time.Sleep(time.Millisecond)
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

// serveBig serves an answer of n bytes to every request on loopback, each
// connection closed within the bound within at the end, and returns its URL, the cancel that starts the close of every
// connection, and a channel closed when Serve has returned.
func serveBig(t *testing.T, n int, within time.Duration) (string, context.CancelFunc, chan struct{}) {
	t.Helper()
	// Small socket buffers, so that the answer is still being written
	// when the close begins (accepted sockets inherit the listener's).
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) {
			_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF, 32<<10)
		})
	}}
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := json.Marshal(strings.Repeat("x", n))
	srv := &wsserve.WebSocketServer{MaxMessage: 1 << 20, PingInterval: -1, CloseWithin: within,
		Conn: rpc.Options{Bind: func(*rpc.Conn) rpc.Handler { return bigHandler{answer} }}}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := srv.Serve(ctx, ln); err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-served:
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return")
		}
	})
	return "ws://" + ln.Addr().String(), cancel, served
}

// A peer that keeps reading gets what is being written to it and then the
// close 1001, however long past the close's bound (100 ms here) the write
// runs: the bound cuts a peer that stops reading, not one that reads
// slowly. The rest of the 2 MiB answer takes 450 ms or more: the client
// reads 4 KiB (its buffer) at a time, a millisecond apart. Before, the bound was one deadline for the whole close, and
// such a peer (or any peer whose answer or close frame a loaded server had
// not written by then) saw the connection end with no close frame.
func TestGoingAwayReachesSlowReader(t *testing.T) {
	const size = 2 << 20
	url, shutdown, served := serveBig(t, size, 100*time.Millisecond)
	var sc *slowConn
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		_ = c.(*net.TCPConn).SetReadBuffer(32 << 10)
		sc = &slowConn{Conn: c}
		return sc, nil
	}}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPClient: client})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(-1)
	if err := ws.Write(ctx, websocket.MessageText, []byte(`{"id":1,"method":"big"}`)); err != nil {
		t.Fatal(err)
	}
	type read struct {
		msg []byte
		err error
	}
	reads := make(chan read, 2)
	go func() {
		for range 2 {
			_, msg, err := ws.Read(ctx)
			reads <- read{msg, err}
		}
	}()
	for sc.read.Load() < 256<<10 {
		time.Sleep(time.Millisecond)
	}
	shutdown() // the answer is being written, to a peer that reads slowly
	r := <-reads
	if r.err != nil {
		t.Fatalf("answer cut off after %d bytes: %v", sc.read.Load(), r.err)
	}
	var resp struct {
		ID     int    `json:"id"`
		Result string `json:"result"`
	}
	if err := json.Unmarshal(r.msg, &resp); err != nil || resp.ID != 1 || len(resp.Result) != size {
		t.Fatalf("answer: id %d, %d bytes (%v), want id 1, %d bytes", resp.ID, len(resp.Result), err, size)
	}
	if r = <-reads; websocket.CloseStatus(r.err) != websocket.StatusGoingAway {
		t.Fatalf("after the answer: %v, want close 1001", r.err)
	}
	select {
	case <-served:
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
}

// A peer that stops reading holds the close up for the bound (20 ms, the
// drain's) and no longer: Serve returns well within a second although an
// answer of 2 MiB to it is stuck.
func TestGoingAwayCutsStalledReader(t *testing.T) {
	url, shutdown, served := serveBig(t, 2<<20, 20*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			_ = c.(*net.TCPConn).SetReadBuffer(32 << 10)
		}
		return c, err
	}}}
	ws, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPClient: client})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	if err := ws.Write(ctx, websocket.MessageText, []byte(`{"id":1,"method":"big"}`)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the answer fills both socket buffers
	t0 := time.Now()
	shutdown()
	select {
	case <-served:
	case <-time.After(time.Second):
		t.Fatal("Serve held up more than 1 s by a peer that does not read")
	}
	t.Logf("Serve returned %v after the shutdown began", time.Since(t0).Round(time.Millisecond))
}
