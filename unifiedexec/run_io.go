package unifiedexec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"
)

// forwarder writes the output chunks of a Run to its writers, dropping a
// stream's bytes beyond limit (0: no cap). The first failed write closes
// failed; later output is dropped.
type forwarder struct {
	stdout, stderr io.Writer
	limit          int64
	failed         chan struct{}

	mu      sync.Mutex
	written map[string]int64 // guarded by mu
	broken  bool             // guarded by mu
}

func newForwarder(stdout, stderr io.Writer, limit int64) *forwarder {
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	return &forwarder{stdout: stdout, stderr: stderr, limit: limit, failed: make(chan struct{}), written: map[string]int64{}}
}

// write is the OnOutput callback.
func (f *forwarder) write(ch Chunk) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.broken {
		return
	}
	data := ch.Data
	if f.limit > 0 {
		room := max(f.limit-f.written[ch.Stream], 0)
		if int64(len(data)) > room {
			data = data[:room]
		}
		f.written[ch.Stream] += int64(len(data))
	}
	if len(data) == 0 {
		return
	}
	w := f.stdout
	if ch.Stream == "stderr" {
		w = f.stderr
	}
	if _, err := w.Write(data); err != nil {
		f.broken = true
		close(f.failed)
	}
}

// copyStdin starts the copy of o.Stdin to the process, if any, and
// returns the function that ends it: it unblocks a Stdin with
// SetReadDeadline and waits for the copier; any other copier is left to
// end at its next Read.
func (r *run) copyStdin(ctx context.Context) (finish func()) {
	if r.o.Stdin == nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		copyTo(ctx, r.p, r.o.Stdin)
	}()
	return func() {
		d, ok := r.o.Stdin.(interface{ SetReadDeadline(time.Time) error })
		if !ok || d.SetReadDeadline(time.Now()) != nil {
			return
		}
		<-done
	}
}

// copyTo copies in to the process's stdin; EOF closes it. It ends at the
// first failed read or write.
func copyTo(ctx context.Context, p *Process, in io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := in.Read(buf)
		if n > 0 {
			if werr := p.Write(ctx, append([]byte(nil), buf[:n]...)); werr != nil {
				return
			}
		}
		if errors.Is(err, io.EOF) {
			_ = p.CloseStdin(ctx)
		}
		if err != nil {
			return
		}
	}
}

// signal forwards one signal the caller received to the command.
func (r *run) signal(ctx context.Context, s os.Signal) {
	var err error
	switch s {
	case syscall.SIGINT:
		if r.o.TTY {
			err = r.p.Write(ctx, []byte{3})
		} else {
			err = r.p.Signal(ctx, SignalInterrupt)
		}
	case syscall.SIGTERM, syscall.SIGHUP:
		_, err = r.p.Terminate(ctx, 2*time.Second)
	case sigWinch:
		if !r.o.TTY || r.o.Size == nil {
			return
		}
		if rows, cols, ok := r.o.Size(); ok {
			err = r.p.Resize(ctx, rows, cols)
		}
	}
	if err != nil && r.o.Stderr != nil {
		fmt.Fprintf(r.o.Stderr, "codex: forwarding %v: %v\n", s, err)
	}
}
