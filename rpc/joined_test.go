package rpc_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codexec/codex/rpc"
)

// gatedWriter counts writes and holds the first one until release is
// closed; entered is closed once the first write began.
type gatedWriter struct {
	mu      sync.Mutex
	writes  int
	data    []byte
	first   bool
	entered chan struct{}
	release chan struct{}
}

func newGatedWriter() *gatedWriter {
	return &gatedWriter{entered: make(chan struct{}), release: make(chan struct{})}
}

func (w *gatedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	first := !w.first
	w.first = true
	w.mu.Unlock()
	if first {
		close(w.entered)
		<-w.release
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes++
	w.data = append(w.data, p...)
	return len(p), nil
}

func (w *gatedWriter) count() (int, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writes, string(w.data)
}

// gatedConn is a stdio Conn writing to a gatedWriter, closed at the end of
// the test.
func gatedConn(t *testing.T) (*rpc.Conn, *gatedWriter) {
	inR, inW := net.Pipe()
	out := newGatedWriter()
	c := rpc.NewConn(rpc.NewStdioFramer(inR, out, inR, "stdio", maxMsg), rpc.Options{})
	t.Cleanup(func() {
		_ = inW.Close()
		_ = c.Close()
		c.Wait()
	})
	return c, out
}

// pooled returns msg in a frame from the pool, as SendJoined takes them.
func pooled(msg string) []byte { return append(rpc.AcquireFrame(), msg...) }

// TestSendJoinedOneWrite: the messages of several SendJoined calls made
// while a write is in flight leave together in the next write, each whole;
// a SendJoined on a free connection is written at once, alone.
func TestSendJoinedOneWrite(t *testing.T) {
	c, out := gatedConn(t)
	ctx := callCtx(t)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := c.Send(ctx, []byte(`{"first":0}`), false); err != nil {
			t.Error(err)
		}
	}()
	<-out.entered
	const callers = 8
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.SendJoined(ctx, true, pooled(fmt.Sprintf(`{"exited":%d}`, i)), pooled(fmt.Sprintf(`{"closed":%d}`, i))); err != nil {
				t.Error(err)
			}
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for rpc.JoinedWaiting(c) < 2*callers {
		if time.Now().After(deadline) {
			t.Fatalf("%d messages joined, want %d", rpc.JoinedWaiting(c), 2*callers)
		}
		time.Sleep(time.Millisecond)
	}
	close(out.release)
	wg.Wait()
	writes, data := out.count()
	if writes != 2 {
		t.Errorf("a write in flight and %d joined calls took %d writes, want 2", callers, writes)
	}
	lines := strings.Split(strings.TrimSuffix(data, "\n"), "\n")
	if len(lines) != 1+2*callers || lines[0] != `{"first":0}` {
		t.Fatalf("lines: %q", lines)
	}
	// Each call's messages stay together and in order.
	var calls []string
	for i := 1; i < len(lines); i += 2 {
		var a, b int
		if _, err := fmt.Sscanf(lines[i]+lines[i+1], `{"exited":%d}{"closed":%d}`, &a, &b); err != nil || a != b {
			t.Fatalf("lines %d and %d: %q %q", i, i+1, lines[i], lines[i+1])
		}
		calls = append(calls, lines[i])
	}
	sort.Strings(calls)
	for i := 1; i < len(calls); i++ {
		if calls[i] == calls[i-1] {
			t.Fatalf("%s written twice", calls[i])
		}
	}

	// Alone on a free connection: written at once, in one write.
	if err := c.SendJoined(ctx, true, pooled(`{"alone":1}`)); err != nil {
		t.Fatal(err)
	}
	if writes, data := out.count(); writes != 3 || !strings.HasSuffix(data, "{\"alone\":1}\n") {
		t.Fatalf("after a lone SendJoined: %d writes, ending %q", writes, data[max(0, len(data)-20):])
	}
}

// TestSendJoinedGivenUp: a group whose context ends while it waits for
// the write token is not written, and every caller in it gets the error.
func TestSendJoinedGivenUp(t *testing.T) {
	c, out := gatedConn(t)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = c.Send(callCtx(t), []byte(`{"first":0}`), false)
	}()
	<-out.entered
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 3)
	for i := range 3 {
		go func() { errs <- c.SendJoined(ctx, true, pooled(fmt.Sprintf(`{"n":%d}`, i))) }()
	}
	deadline := time.Now().Add(10 * time.Second)
	for rpc.JoinedWaiting(c) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d messages joined, want 3", rpc.JoinedWaiting(c))
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	for range 3 {
		if err := <-errs; !errors.Is(err, context.Canceled) {
			t.Errorf("SendJoined: %v, want context.Canceled", err)
		}
	}
	close(out.release)
	wg.Wait()
	if writes, data := out.count(); writes != 1 || data != "{\"first\":0}\n" {
		t.Fatalf("%d writes of %q, want only the first", writes, data)
	}
}
