package cli

import (
	"io"
	"sync"
)

// joinedWriter is the writer of the server's log: a line that finds
// another one being written waits, and leaves in one write with the lines
// that arrived behind it meanwhile (a terminate-all logs one "process
// ended" line per process at once); a line that finds the writer free is
// written at once. As with a locked writer, Write returns once its line
// was written (or failed), lines stay whole, and the lines of one
// goroutine keep their order.
type joinedWriter struct {
	w    io.Writer
	sync func() error // the Sync of w; nil: nothing to sync

	mu   sync.Mutex
	busy bool      // guarded by mu: a write is in flight (the token is held)
	open *logBatch // guarded by mu: lines waiting for the token, gathering more
}

// logBatch is lines that leave in one write.
type logBatch struct {
	buf    []byte        // appended under joinedWriter.mu until the batch takes the token
	turn   chan struct{} // closed when the batch is handed the token
	handed bool          // guarded by joinedWriter.mu: turn is closed
	done   chan struct{} // closed once buf was written
	err    error         // written before done is closed
}

func newJoinedWriter(w io.Writer, sync func() error) *joinedWriter {
	return &joinedWriter{w: w, sync: sync}
}

// Write writes p alone if no write is in flight, else with the lines
// gathered behind that write. It takes no ownership of p.
func (j *joinedWriter) Write(p []byte) (int, error) {
	j.mu.Lock()
	if !j.busy {
		j.busy = true
		j.mu.Unlock()
		n, err := j.w.Write(p)
		j.handOff()
		return n, err
	}
	b := j.open
	first := b == nil
	if first {
		b = &logBatch{turn: make(chan struct{}), done: make(chan struct{})}
		j.open = b
	}
	b.buf = append(b.buf, p...)
	j.mu.Unlock()
	if first {
		<-b.turn
		j.mu.Lock()
		j.open = nil // stop gathering: later lines wait for the next write
		buf := b.buf
		j.mu.Unlock()
		_, b.err = j.w.Write(buf)
		close(b.done)
		j.handOff()
	} else {
		<-b.done
	}
	if b.err != nil {
		return 0, b.err
	}
	return len(p), nil
}

// handOff passes the token to the batch gathering behind the write that
// just ended, or frees it.
func (j *joinedWriter) handOff() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if b := j.open; b != nil && !b.handed {
		b.handed = true
		close(b.turn)
		return
	}
	j.busy = false
}

// Sync syncs the underlying writer. Lines whose Write returned are written
// already.
func (j *joinedWriter) Sync() error {
	if j.sync == nil {
		return nil
	}
	return j.sync()
}
