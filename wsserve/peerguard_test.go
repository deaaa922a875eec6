package wsserve_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wsserve"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// serveHTTP serves h on a loopback listener until the test ends and
// returns its address.
func serveHTTP(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close(); <-done })
	return ln.Addr().String()
}

func status(t *testing.T, url string) int {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestPeerGate: a gate refuses every peer until its check is set, then
// asks the check about each request with the connection's TCP addresses;
// a refusal is a 403 and a "refused NAME peer" warning. A nil gate
// serves everyone.
func TestPeerGate(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	var nilGate *wsserve.PeerGate
	if code := status(t, "http://"+serveHTTP(t, nilGate.Guard("x", nil, ok))+"/"); code != http.StatusOK {
		t.Errorf("nil gate: %d, want 200", code)
	}

	core, logs := observer.New(zap.WarnLevel)
	gate := &wsserve.PeerGate{}
	addr := serveHTTP(t, gate.Guard("metrics", zap.New(core), ok))
	if code := status(t, "http://"+addr+"/"); code != http.StatusForbidden {
		t.Errorf("unset gate: %d, want 403", code)
	}
	var refuse atomic.Bool
	var seenLocal, seenRemote atomic.Value
	gate.Set(func(local, remote net.Addr) error {
		seenLocal.Store(local.String())
		seenRemote.Store(remote.String())
		if refuse.Load() {
			return errors.New("sandboxed")
		}
		return nil
	})
	if code := status(t, "http://"+addr+"/"); code != http.StatusOK {
		t.Errorf("allowing check: %d, want 200", code)
	}
	if seenLocal.Load() != addr {
		t.Errorf("check saw local %v, want %s", seenLocal.Load(), addr)
	}
	if r, _ := seenRemote.Load().(string); r == "" || r == addr {
		t.Errorf("check saw remote %q", r)
	}
	refuse.Store(true)
	if code := status(t, "http://"+addr+"/"); code != http.StatusForbidden {
		t.Errorf("refusing check: %d, want 403", code)
	}
	if n := logs.FilterMessage("refused metrics peer").Len(); n != 2 {
		t.Errorf("%d \"refused metrics peer\" lines, want 2 (unset, refused)", n)
	}
}

// TestSlowPeerCheckHoldsUpNoOne: while the peer check of one upgrade is
// stuck, another client's upgrade goes through.
func TestSlowPeerCheckHoldsUpNoOne(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	entered := make(chan struct{})
	release := make(chan struct{})
	var first sync.Once
	srv := &wsserve.WebSocketServer{MaxMessage: 1 << 20, PingInterval: -1,
		Conn: rpc.Options{Bind: func(*rpc.Conn) rpc.Handler { return nil }},
		CheckPeer: func(_, _ net.Addr) error {
			stuck := false
			first.Do(func() { stuck = true; close(entered) })
			if stuck {
				<-release
			}
			return nil
		}}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	defer func() { cancel(); <-served }()
	url := "ws://" + ln.Addr().String()
	dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer dcancel()
	slow := make(chan error, 1)
	go func() {
		ws, _, err := websocket.Dial(dctx, url, &websocket.DialOptions{HTTPClient: &http.Client{}})
		if err == nil {
			ws.CloseNow()
		}
		slow <- err
	}()
	<-entered
	start := time.Now()
	ws, _, err := websocket.Dial(dctx, url, &websocket.DialOptions{HTTPClient: &http.Client{}})
	if err != nil {
		t.Fatalf("second upgrade while the first check is stuck: %v", err)
	}
	ws.CloseNow()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("second upgrade took %v", d)
	}
	close(release)
	if err := <-slow; err != nil {
		t.Errorf("the slow upgrade: %v", err)
	}
}
