package wsserve_test

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wsserve"
)

// countingObserver counts what a WebSocketServer reports.
type countingObserver struct {
	open, total atomic.Int64
	mu          sync.Mutex
	refused     map[string]int
}

func (o *countingObserver) ConnOpened() { o.open.Add(1); o.total.Add(1) }
func (o *countingObserver) ConnClosed() { o.open.Add(-1) }
func (o *countingObserver) ConnRefused(reason string) {
	o.mu.Lock()
	o.refused[reason]++
	o.mu.Unlock()
}

// TestMaxConnections: of 12 upgrades racing for 5 places exactly 5 get
// through and 7 get 503; the observer sees the same; a closed connection
// frees its place.
func TestMaxConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	obs := &countingObserver{refused: map[string]int{}}
	srv := &wsserve.WebSocketServer{MaxMessage: 1 << 20, PingInterval: -1, MaxConnections: 5, Observer: obs,
		Conn: rpc.Options{Bind: func(*rpc.Conn) rpc.Handler { return nil }}}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	defer func() { cancel(); <-served }()
	url := "ws://" + ln.Addr().String()
	dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer dcancel()
	var (
		mu     sync.Mutex
		conns  []*websocket.Conn
		codes  = map[int]int{}
		wg     sync.WaitGroup
		client = &http.Client{}
	)
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ws, resp, err := websocket.Dial(dctx, url, &websocket.DialOptions{HTTPClient: client})
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				conns = append(conns, ws)
			} else if resp != nil {
				codes[resp.StatusCode]++
			} else {
				t.Errorf("dial: %v", err)
			}
		}()
	}
	wg.Wait()
	if len(conns) != 5 || codes[http.StatusServiceUnavailable] != 7 {
		t.Fatalf("%d connections, refusals %v; want 5 and 7 × 503", len(conns), codes)
	}
	// The client sees its upgrade before the server reports the open to
	// the observer: wait for the count (a CI run read 4).
	var refused int
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		obs.mu.Lock()
		refused = obs.refused[wsserve.RefusedLimit]
		obs.mu.Unlock()
		if (obs.open.Load() == 5 && refused == 7) || time.Now().After(deadline) {
			break
		}
	}
	if obs.open.Load() != 5 || refused != 7 {
		t.Errorf("observer: %d open, %d refused for the limit; want 5, 7", obs.open.Load(), refused)
	}
	conns[0].Close(websocket.StatusNormalClosure, "")
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		ws, _, err := websocket.Dial(dctx, url, &websocket.DialOptions{HTTPClient: client})
		if err == nil {
			conns[0] = ws
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the closed connection's place never came back: %v", err)
		}
	}
	for _, c := range conns {
		c.CloseNow()
	}
}
