package rpc_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codexec/codex/rpc"
)

// parkHandler parks "park" requests until the connection ends and then tries
// to answer them anyway; "block" holds the handler goroutine until the end;
// "twice" is answered twice.
type parkHandler struct {
	c *rpc.Conn
}

func (h parkHandler) Handle(ctx context.Context, req *rpc.Request) (any, error) {
	switch req.Method {
	case "park":
		h.c.Go(func(ctx context.Context) {
			<-ctx.Done()
			_ = h.c.Respond(req.ID, "late", nil)
		})
		return nil, rpc.ErrAsync
	case "block":
		<-ctx.Done()
		return "late", nil
	case "twice":
		_ = h.c.Respond(req.ID, "first", nil)
		_ = h.c.Respond(req.ID, "second", nil)
		return nil, rpc.ErrAsync
	}
	return "ok", nil
}

// Every request received gets exactly one answer, even when the connection
// is closed while some are parked, blocked or still queued.
func TestConnAnswersEveryRequestOnceAtClose(t *testing.T) {
	for _, conc := range []int{0, 1, 4} {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		c := rpc.NewConn(rpc.NewStdioFramer(inR, outW, closers{inR, outW}, "exec-server stdio", 1<<20), rpc.Options{
			Concurrency: conc,
			Bind:        func(c *rpc.Conn) rpc.Handler { return parkHandler{c: c} },
		})
		lines := make(chan string, 100)
		go func() {
			sc := bufio.NewScanner(outR)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		_, _ = io.WriteString(inW, `{"id":1,"method":"twice"}`+"\n"+`{"id":2,"method":"park"}`+"\n"+`{"id":3,"method":"park"}`+"\n")
		if conc != 1 {
			// In strictly serial mode a parked request holds up the rest.
			_, _ = io.WriteString(inW, `{"id":4,"method":"fast"}`+"\n")
		}
		// Wait for the answer to "twice" (and "fast"), so the others are in.
		want := map[float64]int{1: 1}
		if conc != 1 {
			want[4] = 1
		}
		seen := map[float64]int{}
		for len(seen) < len(want) {
			seen[lineID(t, <-lines)]++
		}
		if conc != 1 {
			_, _ = io.WriteString(inW, `{"id":5,"method":"block"}`+"\n"+`{"id":6,"method":"fast"}`+"\n"+`{"id":7,"method":"fast"}`+"\n")
			want[5], want[6], want[7] = 1, 1, 1
		}
		want[2], want[3] = 1, 1
		// The block request may not have been read yet; closing the input
		// (EOF) ends the connection once every line was read.
		_ = inW.Close()
		for l := range lines {
			seen[lineID(t, l)]++
			if strings.Contains(l, `"second"`) {
				t.Errorf("conc %d: request answered twice: %s", conc, l)
			}
		}
		c.Wait()
		_ = outR.Close()
		for k := range want {
			if seen[k] != 1 {
				t.Errorf("conc %d: request %v answered %d times", conc, k, seen[k])
			}
		}
	}
}

func lineID(t *testing.T, l string) float64 {
	t.Helper()
	var m struct{ ID float64 }
	if err := json.Unmarshal([]byte(l), &m); err != nil {
		t.Fatalf("bad line %q", l)
	}
	return m.ID
}

// failFramer reads until closed and fails every write.
type failFramer struct {
	once   sync.Once
	closed chan struct{}
	msgs   chan []byte
}

func (f *failFramer) Read(ctx context.Context) ([]byte, error) {
	select {
	case m := <-f.msgs:
		return m, nil
	case <-f.closed:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
func (f *failFramer) Write(context.Context, []byte) error { return errors.New("broken pipe") }
func (f *failFramer) Close(bool) error {
	f.once.Do(func() { close(f.closed) })
	return nil
}
func (f *failFramer) Label() string { return "fail" }

// A failed write ends the connection, and Wait covers every goroutine the
// failure started (the leak check of TestMain sees any left over).
func TestConnWriteFailureEnds(t *testing.T) {
	for i := 0; i < 50; i++ {
		f := &failFramer{closed: make(chan struct{}), msgs: make(chan []byte, 1)}
		c := rpc.NewConn(f, rpc.Options{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.Notify(context.Background(), "x", nil)
		}()
		f.msgs <- []byte(`{"id":1,"method":"nothing"}`)
		select {
		case <-c.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("a failed write did not end the connection")
		}
		c.Wait()
		wg.Wait()
	}
}

// endingReader yields its lines, then fails as a peer's close does.
type endingReader struct{ r io.Reader }

func (e endingReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == io.EOF {
		return n, errors.New("peer closed the connection")
	}
	return n, err
}

// The notifications a peer sent before the connection ended are all
// handled, in order, even when the end is seen while they are still
// queued behind a slow handler (a process's exit and close arrive together
// with a WebSocket close 1001; the client lost the close and reported the
// server gone instead of the exit code).
func TestConnHandlesNotificationsReadBeforeTheEnd(t *testing.T) {
	const n = 20
	var lines strings.Builder
	for i := range n {
		fmt.Fprintf(&lines, `{"method":"note","params":{"i":%d}}`+"\n", i)
	}
	var mu sync.Mutex
	got := 0
	f := rpc.NewStdioFramer(endingReader{strings.NewReader(lines.String())}, io.Discard, nil, "test", 1<<20)
	c := rpc.NewConn(f, rpc.Options{Bind: func(*rpc.Conn) rpc.Handler {
		return rpc.HandlerFunc(func(_ context.Context, req *rpc.Request) (any, error) {
			mu.Lock()
			first := got == 0
			got++
			mu.Unlock()
			if first {
				time.Sleep(50 * time.Millisecond) // the rest queue up, then the read fails
			}
			return nil, nil
		})
	}})
	<-c.Done()
	c.Wait()
	mu.Lock()
	defer mu.Unlock()
	if got != n {
		t.Fatalf("%d of %d notifications handled once the connection ended", got, n)
	}
}

// Every runs its function periodically on the connection's account: runs
// come while the connection lives, none after it ended, and Wait waits
// for a run under way.
func TestConnEvery(t *testing.T) {
	in, _, c := pipeConn(t, rpc.Options{}, 1<<20)
	var runs atomic.Int32
	inRun := make(chan struct{})
	release := make(chan struct{})
	c.Every(5*time.Millisecond, func(ctx context.Context) {
		if runs.Add(1) == 3 {
			close(inRun)
			select { // the third run is under way when the connection ends
			case <-release:
			case <-time.After(10 * time.Second):
			}
		}
	})
	select {
	case <-inRun:
	case <-time.After(10 * time.Second):
		t.Fatalf("%d runs in 10 s, want 3", runs.Load())
	}
	in.Close()
	_ = c.Close()
	waited := make(chan struct{})
	go func() { c.Wait(); close(waited) }()
	select {
	case <-waited:
		t.Fatal("Wait returned while a run was under way")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return after the run ended")
	}
	n := runs.Load()
	time.Sleep(30 * time.Millisecond)
	if runs.Load() != n {
		t.Errorf("runs went on after the connection ended: %d → %d", n, runs.Load())
	}
}
