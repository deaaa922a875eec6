package wsserve_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/codexec/codex/wsserve"
)

// serveIdle runs srv on a loopback listener until the test ends and
// returns its address.
func serveIdle(t *testing.T, srv *wsserve.WebSocketServer) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		<-served
	})
	return ln.Addr().String()
}

// closedWithin sends req on a new connection, reads the answer (which must
// have status want) and reports whether the server then closed the
// connection within d.
func closedWithin(t *testing.T, addr, req string, want int, d time.Duration) bool {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(nc)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != want {
		t.Fatalf("status %d, want %d", resp.StatusCode, want)
	}
	_ = nc.SetReadDeadline(time.Now().Add(d))
	_, err = br.ReadByte()
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// TestRefusedRequestsCloseTheConnection: a request the listener refuses (a
// wrong token, an Origin, no upgrade, an unknown path, an upgrade the
// WebSocket library refuses) ends its
// connection with the answer. Kept open, every refused client could hold a
// connection (a goroutine and ~25 KB) for as long as it liked without a
// token, beside --max-connections: 2,000 such connections were all still
// open 15 s later.
func TestRefusedRequestsCloseTheConnection(t *testing.T) {
	sum := sha256.Sum256([]byte("secret-token"))
	addr := serveIdle(t, &wsserve.WebSocketServer{MaxMessage: 1 << 20, PingInterval: -1, TokenSHA256: sum[:]})
	upgrade := "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
	for _, c := range []struct {
		name, req string
		status    int
	}{
		{"wrong token", "GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer nope\r\n" + upgrade + "\r\n", http.StatusUnauthorized},
		{"no token", "GET / HTTP/1.1\r\nHost: x\r\n" + upgrade + "\r\n", http.StatusUnauthorized},
		{"origin", "GET /readyz HTTP/1.1\r\nHost: x\r\nOrigin: http://evil.example\r\n\r\n", http.StatusForbidden},
		{"no upgrade", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", http.StatusBadRequest},
		{"unknown path", "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", http.StatusNotFound},
		// Refused by the WebSocket library, past the token.
		{"no key", "GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer secret-token\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\r\n", http.StatusBadRequest},
		{"no upgrade header", "GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer secret-token\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", http.StatusUpgradeRequired},
	} {
		if !closedWithin(t, addr, c.req, c.status, 2*time.Second) {
			t.Errorf("%s: the connection stayed open after the %d answer", c.name, c.status)
		}
	}
}

// TestIdleProbeConnectionClosed: a connection kept alive after a probe is
// closed once it waited IdleTimeout for its next request, while one that
// goes on asking is served.
func TestIdleProbeConnectionClosed(t *testing.T) {
	addr := serveIdle(t, &wsserve.WebSocketServer{MaxMessage: 1 << 20, PingInterval: -1, IdleTimeout: 200 * time.Millisecond})
	if !closedWithin(t, addr, "GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n", http.StatusOK, 5*time.Second) {
		t.Fatal("an idle connection after /readyz stayed open for 5 s with IdleTimeout 200 ms")
	}
	if closedWithin(t, addr, "GET /livez HTTP/1.1\r\nHost: x\r\n\r\n", http.StatusOK, 50*time.Millisecond) {
		t.Fatal("the connection was closed right after /livez, before IdleTimeout")
	}
}
