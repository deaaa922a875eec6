package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestParkedReadsHoldNoOutputForSlowReader parks 256 long polls on a process
// that then prints 1 MiB, over a WebSocket whose client reads nothing
// more. The woken reads wait for the right to write behind the first
// answer the client does not take, and must not hold their result
// meanwhile: each held its copy of the output and its encoded answer, 1.3
// MB per read over a real WebSocket (300 reads: 400 MB of heap), so a client could make the
// server hold N times what a command printed with N small requests.
func TestParkedReadsHoldNoOutputForSlowReader(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addr, ws, send := slowReaderConn(t, ctx)
	answer := func(id int) {
		t.Helper()
		for {
			_, b, err := ws.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var m struct {
				ID    *int            `json:"id"`
				Error json.RawMessage `json:"error"`
			}
			if json.Unmarshal(b, &m) == nil && m.ID != nil && *m.ID == id {
				if m.Error != nil {
					t.Fatalf("request %d: %s", id, m.Error)
				}
				return
			}
		}
	}
	send(map[string]any{"id": 1, "method": "initialize", "params": map[string]any{"clientName": "e2e"}})
	answer(1)
	send(map[string]any{"method": "initialized"})
	trigger := filepath.Join(t.TempDir(), "go")
	script := fmt.Sprintf("while [ ! -e %s ]; do sleep 0.01; done; dd if=/dev/zero bs=1048576 count=1 status=none; exec sleep 60", trigger)
	send(map[string]any{"id": 2, "method": "process/start", "params": startParams("p", "/bin/sh", "-c", script)})
	answer(2)
	const reads = 256
	for i := range reads {
		send(map[string]any{"id": 100 + i, "method": "process/read", "params": map[string]any{"processId": "p", "afterSeq": 0, "waitMs": 60000}})
	}
	// The reads are parked once a read without waitMs, behind them in
	// order, is answered.
	send(map[string]any{"id": 3, "method": "process/read", "params": map[string]any{"processId": "p"}})
	answer(3)
	base := heapAlloc(t, addr)
	if err := os.WriteFile(trigger, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// From here on the client reads nothing. What stays is the answer
	// being written and those the socket's buffers took (about 2.2 MB
	// each: 2.0-7.1 MB in 16 runs); a copy per woken read was 23-34 MB.
	const limit = 16 << 20
	grown := heapGrowth(t, addr, base, limit)
	if grown > limit {
		t.Fatalf("the server's heap grew by %d MB for %d parked reads woken by 1 MiB of output that the client does not read (%d KB per read); want under %d MB", grown>>20, reads, grown/reads>>10, limit>>20)
	}
	t.Logf("heap grew by %d KB", grown>>10)
}

// slowReaderConn starts a server with pprof on a free loopback port and
// opens a raw WebSocket to it that reads nothing unless told: what the
// tests of a client that does not read need. It returns the pprof address
// (heapAlloc), the connection, and send, which writes one JSON message.
func slowReaderConn(t *testing.T, ctx context.Context) (addr string, ws *websocket.Conn, send func(v any)) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr = ln.Addr().String()
	ln.Close()
	s := startServer(t, "--debug-pprof", addr, "--log-level", "info", "--shutdown-grace", "0")
	ws, _, err = websocket.Dial(ctx, s.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.CloseNow() })
	ws.SetReadLimit(-1)
	send = func(v any) {
		t.Helper()
		b, _ := json.Marshal(v)
		if err := ws.Write(ctx, websocket.MessageText, b); err != nil {
			t.Fatal(err)
		}
	}
	return addr, ws, send
}
