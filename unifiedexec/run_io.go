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

// streamChunk is the chunk size from which output is taken for a stream
// (the server reads 64 KiB or more at a time only from a full pipe).
const streamChunk = 64 << 10

// forwarder writes the output of a Run to its writers, dropping a
// stream's bytes beyond limit (0: no cap). The first failed write closes
// failed; later output is dropped. It is the process's Stdout and Stderr
// (writer), not an OnOutput callback, so that the process reuses the
// memory of each chunk once written.
type forwarder struct {
	stdout, stderr io.Writer
	limit          int64
	failed         chan struct{}

	mu      sync.Mutex
	written [2]int64 // guarded by mu: stdout (or pty), stderr
	grown   [2]bool  // guarded by mu: growPipe was tried
	broken  bool     // guarded by mu
}

func newForwarder(stdout, stderr io.Writer, limit int64) *forwarder {
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	return &forwarder{stdout: stdout, stderr: stderr, limit: limit, failed: make(chan struct{})}
}

// writer returns the writer of stream 0 (stdout or pty) or 1 (stderr). Its
// Write never fails: a failure is reported through failed.
func (f *forwarder) writer(stream int) io.Writer { return streamWriter{f, stream} }

type streamWriter struct {
	f      *forwarder
	stream int
}

func (w streamWriter) Write(b []byte) (int, error) {
	w.f.write(w.stream, b)
	return len(b), nil
}

// write forwards data of stream i.
func (f *forwarder) write(i int, data []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.broken {
		return
	}
	if f.limit > 0 {
		room := max(f.limit-f.written[i], 0)
		if int64(len(data)) > room {
			data = data[:room]
		}
		f.written[i] += int64(len(data))
	}
	if len(data) == 0 {
		return
	}
	w := f.stdout
	if i == 1 {
		w = f.stderr
	}
	if file, ok := w.(*os.File); ok && !f.grown[i] && len(data) >= streamChunk {
		// A stream, not a trickle: with a larger pipe each chunk is
		// written at once instead of in 64 KiB pieces, each a wake-up
		// of the reader and of us.
		f.grown[i] = true
		growPipe(file)
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
		if size, ok := r.o.Size(); ok {
			err = r.p.Resize(ctx, size)
		}
	}
	if err != nil && r.o.Stderr != nil {
		fmt.Fprintf(r.o.Stderr, "codex: forwarding %v: %v\n", s, err)
	}
}
