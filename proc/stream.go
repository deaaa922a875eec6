package proc

import (
	"os"
	"sync"
)

// ExitFlushed returns a channel that is closed after Exited, once every
// byte the child wrote to its output streams before it exited was passed
// to the OutputFunc (and the call returned), or its stream ended or was
// closed. It does not wait for descendants that keep a stream open, nor for
// what they write after the exit. A consumer that publishes the exit after
// ExitFlushed never reports it ahead of the output that preceded it.
//
// The order is exact, not timed. For a pipe, what the child wrote before
// it exited is, once it was reaped, either already delivered, in the hands
// of the reader (which holds the stream's lock until the OutputFunc
// returns), or in the pipe (FIONREAD), which is drained up to that count.
// For a PTY the kernel moves the slave's output to the master through an
// asynchronous flip-buffer work item, so FIONREAD may lag; but a
// non-blocking read of the master that finds nothing first flushes that
// work (n_tty_read calls tty_buffer_flush_work before it returns EAGAIN), so
// the drain reads until EAGAIN, bounded by FIONREAD plus the flip buffer's
// limit, so a descendant that writes forever cannot hold it up. The
// residual: a kernel without that flush would let bytes still in the flip
// buffer follow the exit.
func (p *Process) ExitFlushed() <-chan struct{} { return p.exitFlushed }

// outStream is one output stream of a process: the parent's read end and
// the lock that makes reading a chunk and handing it to the OutputFunc one
// step, so that the drain at exit (drainAtExit) can tell what was already
// delivered from what is still in the kernel.
type outStream struct {
	s Stream
	f *os.File // the read end; immutable

	// mu is held from a read that returned bytes (or EOF) until those bytes
	// were passed to the OutputFunc and it returned; a read that finds
	// nothing releases it before the reader parks. Never held while waiting
	// for an output credit.
	mu       sync.Mutex
	consumed int64 // guarded by mu: bytes read and delivered so far
	eof      bool  // guarded by mu: the reader saw EOF or a read error
}
