package cli

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// slowWriter records each Write call; every call takes delay, so that
// lines arriving meanwhile gather behind it.
type slowWriter struct {
	mu     sync.Mutex
	calls  int
	buf    bytes.Buffer
	delay  time.Duration
	inside bool
	err    error
}

func (w *slowWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	if w.inside {
		w.mu.Unlock()
		panic("two writes at once")
	}
	w.inside = true
	w.mu.Unlock()
	time.Sleep(w.delay)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.inside = false
	w.calls++
	if w.err != nil {
		return 0, w.err
	}
	return w.buf.Write(p)
}

// TestJoinedWriterGathers: lines written at once by many goroutines leave in
// fewer writes than lines, never two writes at a time, each line whole, and
// each goroutine's lines in order.
func TestJoinedWriterGathers(t *testing.T) {
	sw := &slowWriter{delay: 2 * time.Millisecond}
	j := newJoinedWriter(sw, nil)
	const writers, lines = 32, 8
	var wg sync.WaitGroup
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range lines {
				line := fmt.Sprintf("writer %02d line %d\n", g, i)
				n, err := j.Write([]byte(line))
				if err != nil || n != len(line) {
					t.Errorf("Write = %d, %v", n, err)
				}
			}
		}()
	}
	wg.Wait()
	got := strings.Split(strings.TrimSuffix(sw.buf.String(), "\n"), "\n")
	if len(got) != writers*lines {
		t.Fatalf("%d lines written, want %d", len(got), writers*lines)
	}
	next := make([]int, writers)
	for _, l := range got {
		var g, i int
		if _, err := fmt.Sscanf(l, "writer %d line %d", &g, &i); err != nil {
			t.Fatalf("line %q torn: %v", l, err)
		}
		if i != next[g] {
			t.Fatalf("writer %d: line %d after line %d", g, i, next[g]-1)
		}
		next[g]++
	}
	if sw.calls >= writers*lines/2 {
		t.Errorf("%d writes for %d lines written at once: not gathered", sw.calls, writers*lines)
	}
	t.Logf("%d lines in %d writes", writers*lines, sw.calls)
}

// TestJoinedWriterLoneLine: a line that finds the writer free is written
// before Write returns, in a write of its own.
func TestJoinedWriterLoneLine(t *testing.T) {
	sw := &slowWriter{}
	j := newJoinedWriter(sw, nil)
	for i := range 3 {
		if _, err := j.Write([]byte("alone\n")); err != nil {
			t.Fatal(err)
		}
		if sw.calls != i+1 || sw.buf.String() != strings.Repeat("alone\n", i+1) {
			t.Fatalf("after line %d: %d writes, %q", i+1, sw.calls, sw.buf.String())
		}
	}
}

// TestJoinedWriterError: the error of a write reaches every line it held.
func TestJoinedWriterError(t *testing.T) {
	boom := errors.New("boom")
	sw := &slowWriter{delay: 2 * time.Millisecond, err: boom}
	j := newJoinedWriter(sw, func() error { return boom })
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := j.Write([]byte("x\n")); !errors.Is(err, boom) {
				t.Errorf("Write error %v, want %v", err, boom)
			}
		}()
	}
	wg.Wait()
	if err := j.Sync(); !errors.Is(err, boom) {
		t.Errorf("Sync = %v", err)
	}
}
