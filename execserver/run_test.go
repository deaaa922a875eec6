package execserver

import (
	"bufio"
	"context"
	"io"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

// runAsync runs Run in a goroutine and returns the channel of its result.
func runAsync(ctx context.Context, cfg Config) <-chan error {
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, nil) }()
	return done
}

func waitRun(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
		return nil
	}
}

// Over stdio, Run answers the handshake and returns nil once stdin ends.
func TestRunStdioServesUntilEOF(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := runAsync(context.Background(), Config{Stdio: true, Stdin: inR, Stdout: outW, MaxMessage: 1 << 20})
	if _, err := io.WriteString(inW, `{"id":1,"method":"initialize","params":{"clientName":"t"}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil || !strings.Contains(line, `"sessionId"`) || !strings.Contains(line, `"id":1`) {
		t.Fatalf("initialize answer = %q, %v", line, err)
	}
	_ = inW.Close()
	if err := waitRun(t, done); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
}

// lineWriter keeps what was written, safe for concurrent use.
type lineWriter struct {
	mu  sync.Mutex
	b   strings.Builder
	got chan struct{}
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	if strings.HasSuffix(w.b.String(), "\n") {
		close(w.got)
	}
	return len(p), nil
}

// Over WebSocket, Run announces the bound URL as one line and returns
// when its context ends.
func TestRunWebSocketAnnouncesURL(t *testing.T) {
	url := &lineWriter{got: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := Config{Addr: netip.MustParseAddrPort("127.0.0.1:0"), MaxMessage: 1 << 20, URLOut: url}
	done := runAsync(ctx, cfg)
	select {
	case <-url.got:
	case err := <-done:
		t.Fatalf("Run returned early: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no URL announced")
	}
	url.mu.Lock()
	line := url.b.String()
	url.mu.Unlock()
	if !strings.HasPrefix(line, "ws://127.0.0.1:") || strings.HasSuffix(line, ":0\n") {
		t.Fatalf("announced %q, want ws://127.0.0.1:PORT", line)
	}
	cancel()
	_ = waitRun(t, done)
}

// A failed listen and a non-positive MaxMessage are returned at once.
func TestRunStartErrors(t *testing.T) {
	if err := Run(context.Background(), Config{Stdio: true}, nil); err == nil {
		t.Error("MaxMessage 0: Run = nil, want an error")
	}
	bad := Config{Addr: netip.MustParseAddrPort("192.0.2.1:1"), MaxMessage: 1 << 20}
	if err := Run(context.Background(), bad, nil); err == nil || !strings.Contains(err.Error(), "listening on 192.0.2.1:1") {
		t.Errorf("unbindable address: Run = %v, want a listening error", err)
	}
}
