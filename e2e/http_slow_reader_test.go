package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestHTTPBodiesBoundedForSlowReader sends 64 http/request calls
// (MaxHTTPRequests) for a 1 MiB body over a WebSocket whose client then
// reads nothing. The bodies a connection holds are bounded by its four
// buffering places until their answers are written: each call gave its
// place back once the body was read, and then its place in flight as
// well, so every answer waited for the write with its body and its
// encoded frame (64 calls for 16 MiB bodies: 1.13 GB of heap; more calls
// after them, more again).
func TestHTTPBodiesBoundedForSlowReader(t *testing.T) {
	t.Parallel()
	body := make([]byte, 1<<20)
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(body) }))
	defer web.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addr, ws, send := slowReaderConn(t, ctx)
	send(map[string]any{"id": 1, "method": "initialize", "params": map[string]any{"clientName": "e2e"}})
	if _, _, err := ws.Read(ctx); err != nil {
		t.Fatal(err)
	}
	send(map[string]any{"method": "initialized"})
	base := heapAlloc(t, addr)
	// From here on the client reads nothing.
	const calls = 64
	for i := range calls {
		send(map[string]any{"id": 100 + i, "method": "http/request", "params": map[string]any{"method": "GET", "url": web.URL, "requestId": fmt.Sprint("r", i)}})
	}
	const limit = 32 << 20
	grown := heapGrowth(t, addr, base, limit)
	if grown > limit {
		t.Fatalf("the server's heap grew by %d MB for %d http/request calls of a 1 MiB body whose answers the client does not read; want under %d MB (four bodies and one answer)", grown>>20, calls, limit>>20)
	}
	t.Logf("heap grew by %d KB", grown>>10)
}
