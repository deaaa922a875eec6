package proc_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/codexec/codex/proc"
)

// doneLog records WriteAsync completions in order.
type doneLog struct {
	mu   sync.Mutex
	errs []string
	all  chan struct{}
	want int
}

func (d *doneLog) fn(i int) func(error) {
	return func(err error) {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.errs = append(d.errs, fmt.Sprintf("%d:%v", i, err))
		if len(d.errs) == d.want {
			close(d.all)
		}
	}
}

// Writes beyond the queue park in order, never block, and are completed
// once their bytes are queued; the child reads everything in order.
func TestWriteAsyncParksInOrder(t *testing.T) {
	t.Parallel()
	gate := filepath.Join(t.TempDir(), "go")
	p, s := start(t, proc.Spec{Argv: []string{"sh", "-c", "while [ ! -e " + gate + " ]; do sleep 0.01; done; exec cat"}, Env: []string{"PATH=/bin:/usr/bin"}, PipeStdin: true}, proc.Options{})
	var want bytes.Buffer
	d := &doneLog{all: make(chan struct{})}
	var parkedIdx []int
	for i := range 3 * proc.StdinQueueLen {
		b := fmt.Appendf(nil, "%04d%s\n", i, bytes.Repeat([]byte("q"), 4000))
		want.Write(b)
		queued, err := p.WriteAsync(b, func() bool { return true }, d.fn(i))
		if err != nil {
			t.Fatal(err)
		}
		if !queued {
			parkedIdx = append(parkedIdx, i)
		}
	}
	if len(parkedIdx) == 0 {
		t.Fatal("nothing parked behind a full queue")
	}
	d.mu.Lock()
	d.want = len(parkedIdx)
	if len(d.errs) == d.want {
		close(d.all)
	}
	d.mu.Unlock()
	if err := p.CloseStdin(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wait(t, d.all, "parked writes completed")
	d.mu.Lock()
	for k, e := range d.errs {
		if e != fmt.Sprintf("%d:<nil>", parkedIdx[k]) {
			t.Fatalf("completion %d is %s; want in order, nil", k, e)
		}
	}
	d.mu.Unlock()
	if code := finish(t, p); code != 0 {
		t.Fatalf("cat exited %d", code)
	}
	if got := s.get(proc.StreamStdout); !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("cat echoed %d bytes, want %d in order", len(got), want.Len())
	}
}

// A refused park returns ErrQueueFull; the exit completes parked writes
// with nil (discarded) and a child that closes its stdin completes them
// with ErrStdinClosed, as a new write at that moment would be answered. The
// writer may queue a parked write or two before the close (nil), so four
// are parked and the last must see the close.
func TestWriteAsyncRefusedAndReleased(t *testing.T) {
	t.Parallel()
	gate := filepath.Join(t.TempDir(), "go")
	for _, tc := range []struct {
		script string
		want   error
	}{
		{"exec sleep 1000", nil}, // killed: discarded
		{"while [ ! -e " + gate + " ]; do sleep 0.01; done; exec 0<&- sleep 1000", proc.ErrStdinClosed},
	} {
		p, _ := start(t, proc.Spec{Argv: []string{"sh", "-c", tc.script}, Env: []string{"PATH=/bin:/usr/bin"}, PipeStdin: true}, proc.Options{})
		chunk := make([]byte, 64<<10)
		d := &doneLog{all: make(chan struct{}), want: 4}
		parked := 0
		for i := 0; parked < 4; i++ {
			queued, err := p.WriteAsync(chunk, func() bool { return true }, d.fn(i))
			if err != nil {
				t.Fatal(err)
			}
			if !queued {
				parked++
			}
		}
		if _, err := p.WriteAsync(chunk, func() bool { return false }, d.fn(-1)); !errors.Is(err, proc.ErrQueueFull) {
			t.Fatalf("refused park: %v, want ErrQueueFull", err)
		}
		if tc.want == nil {
			if err := p.Kill(); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(gate, nil, 0o644); err != nil { // the child closes its stdin
			t.Fatal(err)
		}
		wait(t, d.all, "parked writes released")
		d.mu.Lock()
		closed := false
		for k, e := range d.errs {
			switch {
			case strings.HasSuffix(e, ":<nil>") && !closed:
			case strings.HasSuffix(e, ":"+proc.ErrStdinClosed.Error()):
				closed = true // the child's end closed first (a kill too)
			default:
				t.Errorf("%q: completion %d is %s", tc.script, k, e)
			}
		}
		if tc.want != nil && !closed {
			t.Errorf("%q: completions %v; the last must see the closed stdin", tc.script, d.errs)
		}
		d.mu.Unlock()
		if tc.want != nil {
			_ = p.Kill()
		}
		finish(t, p)
	}
}
