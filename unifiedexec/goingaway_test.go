package unifiedexec_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/codexec/codex/unifiedexec"
)

// A server that closes with 1001 (going away: it shuts down) fails the
// client at once with ErrServerGoingAway, which wraps ErrTransport,
// instead of a recovery that cannot succeed (docs/client.md §11).
func TestGoingAwayFailsAtOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closeNow := make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer ws.CloseNow()
		_, b, err := ws.Read(r.Context())
		if err != nil {
			return
		}
		var req struct{ ID json.RawMessage }
		_ = json.Unmarshal(b, &req)
		_ = ws.Write(r.Context(), websocket.MessageText, []byte(`{"id":`+string(req.ID)+`,"result":{"sessionId":"s","environmentInfo":{}}}`))
		<-closeNow
		_ = ws.Close(websocket.StatusGoingAway, "server shutting down")
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	ctx := context.Background()
	c, err := unifiedexec.Dial(ctx, "ws://"+ln.Addr().String(), unifiedexec.DialOptions{RecoveryTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	t0 := time.Now()
	close(closeNow)
	var serr error
	for time.Since(t0) < 10*time.Second {
		if _, serr = c.EnvironmentStatus(ctx); serr != nil {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !errors.Is(serr, unifiedexec.ErrServerGoingAway) || !errors.Is(serr, unifiedexec.ErrTransport) {
		t.Fatalf("call after the close 1001: %v, want ErrServerGoingAway", serr)
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Fatalf("failed after %v, want at once (no recovery)", d)
	}
}
