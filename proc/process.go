package proc

import (
	"context"
	"errors"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/codexec/codex/internal/reap"
)

// Process is a child process started by Start.
//
// Like exec.Cmd it is single use, and its resource contract is explicit:
// after a successful Start, call Close to kill what is left, join the
// process's goroutines and release its fds and cgroup leaf. Exited and
// OutputDone report the two independent ends of a process: the direct child
// being reaped, and every output stream reaching EOF (docs/protocol.md §7.8 and
// docs/development.md §3.5).
//
// All methods are safe for concurrent use. Close must not be called from
// the OutputFunc, which runs on a goroutine that Close waits for.
//
// Goroutines owned by a process: one wait goroutine (until the child is
// reaped), one reader per output stream (until EOF or force-close), a stdin
// writer only while Write has queued data, and the Kill grace timer while it
// is armed. None of them pins an OS thread: the pidfd, the pipes and the PTY
// master are all polled by the Go netpoller.
//
// Lock order: Process.mu before TreeKiller.mu. stdinQueue.mu is never held
// together with another lock.
type Process struct {
	pid  int
	tty  bool
	log  *zap.Logger
	tree *TreeKiller // nil: Kill reaches the process group only
	leaf string      // this process's cgroup leaf; "" outside cgroup mode

	// outputs are the parent's read ends (stdout and stderr pipes, or the
	// PTY master), immutable after Start. A pipe is closed by its reader at
	// EOF, the PTY master by Close; forceClose may close any of them early.
	outputs []*os.File
	outs    []*outStream  // the same streams with their delivery locks
	out     OutputFunc    // the sink; never nil
	credit  *OutputCredit // nil: no bound

	mu         sync.Mutex  // guards the fields below; held while reaping
	reaped     bool        // the direct child was reaped: its pid is no longer ours
	killed     bool        // Kill was called
	openOut    int         // reader goroutines still running
	graceTimer *time.Timer // armed by Kill while output is open; stopped at EOF
	unfinished int         // of {exit, output EOF}; at 0 the cgroup leaf is released
	leafGone   bool        // the leaf was removed (settleTree or finishOne)
	treeKill   *time.Timer // a kill before the reap signalled the group only: the leaf is settled at the reap, or by this backstop (settleTree)

	exitCode    int            // written by the wait goroutine before exited is closed
	exitSignal  syscall.Signal // likewise: the signal that ended the child, 0 if it exited
	exited      chan struct{}  // closed once the direct child is reaped
	exitedAt    time.Time      // written by the wait goroutine before exited is closed
	exitFlushed chan struct{}  // closed after exited, once the pre-exit output was delivered
	outputDone  chan struct{}  // closed once every reader goroutine returned

	stdin stdinQueue

	wg        sync.WaitGroup // every goroutine owned by the process
	closeOnce sync.Once
}

// stdinQueue is the bounded queue between Write and the writer goroutine,
// with the writes parked behind it by WriteAsync.
type stdinQueue struct {
	f   *os.File // write end: stdin pipe or PTY master; nil: no writable stdin. Immutable.
	pty bool     // f is the PTY master, which the output reader also uses

	mu      sync.Mutex    // guards the fields below
	chunks  [][]byte      // queued, not yet written; at most StdinQueueLen
	bytes   int           // in chunks; at most StdinQueueBytes unless one chunk is larger
	parked  []parkedWrite // waiting for room in chunks, in order
	writing bool          // a writer goroutine is running and will drain chunks
	closing bool          // CloseStdin was called: close f once chunks drain
	closed  bool          // writes are refused: CloseStdin finished or the child closed its end
	exited  bool          // the child was reaped: writes are discarded
	space   chan struct{} // closed when chunks shrink or the state changes; nil unless awaited
}

// parkedWrite is a write waiting for room in the stdin queue.
type parkedWrite struct {
	b    []byte
	done func(error)
}

// Pid returns the process id of the direct child.
func (p *Process) Pid() int { return p.pid }

// IsPTY reports whether the process runs on a pseudo-terminal.
func (p *Process) IsPTY() bool { return p.tty }

// Exited returns a channel that is closed once the direct child was reaped.
// Output may continue after that, from descendants holding the streams.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// ExitedAt returns when the direct child was reaped, or the zero time if
// it was not yet.
func (p *Process) ExitedAt() time.Time {
	select {
	case <-p.exited:
		return p.exitedAt
	default:
		return time.Time{}
	}
}

// OutputDone returns a channel that is closed once every output stream hit
// EOF (or was force-closed after Kill) and its reader goroutine returned. No
// OutputFunc call happens after it is closed.
func (p *Process) OutputDone() <-chan struct{} { return p.outputDone }

// ExitCode returns the exit code of the direct child: its exit status, 128+N
// for death by signal N, or -1 if unknown or if the child has not exited.
func (p *Process) ExitCode() int {
	select {
	case <-p.exited:
		return p.exitCode
	default:
		return -1
	}
}

// Wait waits until the direct child was reaped or ctx is done, and
// returns ExitCode, or ctx.Err(). It does not wait for OutputDone and can
// be called any number of times.
func (p *Process) Wait(ctx context.Context) (int, error) {
	select {
	case <-p.exited:
		return p.exitCode, nil
	case <-ctx.Done():
		return -1, ctx.Err()
	}
}

// Write appends b to the process's stdin queue and returns once it is
// queued, not once it is written. Write takes ownership of b: the caller must
// not modify it afterwards. Chunks are written in order by a single writer
// goroutine. While the queue is full (StdinQueueLen chunks or
// StdinQueueBytes bytes pending), Write blocks until one is written, the
// child exits, or ctx is done (returning ctx.Err()).
//
// Write returns ErrStdinClosed if the process has no writable stdin (a
// non-PTY process started without PipeStdin, or after CloseStdin, or after
// the child closed its end). After the child exited, writes are discarded
// and Write returns nil.
func (p *Process) Write(ctx context.Context, b []byte) error {
	q := &p.stdin
	q.mu.Lock()
	for {
		if q.f == nil || q.closing || q.closed {
			q.mu.Unlock()
			return ErrStdinClosed
		}
		if q.exited || len(b) == 0 {
			q.mu.Unlock()
			return nil
		}
		if q.room(len(b)) && len(q.parked) == 0 {
			break
		}
		if q.space == nil {
			q.space = make(chan struct{})
		}
		space := q.space
		q.mu.Unlock()
		select {
		case <-space:
		case <-p.exited:
		case <-ctx.Done():
			return ctx.Err()
		}
		q.mu.Lock()
	}
	q.push(b)
	if !q.writing {
		// Close marks the queue exited before it waits for p.wg, and this
		// runs under q.mu after checking that flag, so Add never races Wait.
		q.writing = true
		p.wg.Add(1)
		go p.writeLoop()
	}
	q.mu.Unlock()
	return nil
}

// WriteAsync is Write without blocking. When the queue has room, b is
// queued and WriteAsync returns true; done is not called. Otherwise park is
// asked (under the queue's lock; it must not block) whether b may wait: if
// it says no, WriteAsync returns ErrQueueFull. If it says yes, b waits in
// order behind the queue and earlier parked writes, WriteAsync returns
// false, and done is called once, on another goroutine and without locks
// held, with nil when b was queued (or discarded because the child exited)
// or ErrStdinClosed when the child closed its end first. Writes parked
// before a CloseStdin are queued before the close. Other errors are those
// of Write; WriteAsync takes ownership of b as Write does.
func (p *Process) WriteAsync(b []byte, park func() bool, done func(error)) (bool, error) {
	q := &p.stdin
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.f == nil || q.closing || q.closed {
		return false, ErrStdinClosed
	}
	if q.exited || len(b) == 0 {
		return true, nil
	}
	if !q.room(len(b)) || len(q.parked) > 0 {
		if !park() {
			return false, ErrQueueFull
		}
		// The queue is full, so the writer goroutine runs and will take it.
		q.parked = append(q.parked, parkedWrite{b: b, done: done})
		return false, nil
	}
	q.push(b)
	if !q.writing {
		q.writing = true
		p.wg.Add(1)
		go p.writeLoop()
	}
	return true, nil
}

// room reports whether a chunk of n bytes fits in the queue now: fewer than
// StdinQueueLen chunks and StdinQueueBytes bytes, or an empty queue. Called
// with q.mu held.
func (q *stdinQueue) room(n int) bool {
	return len(q.chunks) == 0 || (len(q.chunks) < StdinQueueLen && q.bytes+n <= StdinQueueBytes)
}

// push appends a chunk. Called with q.mu held.
func (q *stdinQueue) push(b []byte) {
	q.chunks = append(q.chunks, b)
	q.bytes += len(b)
}

// promote moves parked writes into the freed room of the queue and returns
// their callbacks. Called with q.mu held.
func (q *stdinQueue) promote() []func(error) {
	var done []func(error)
	for len(q.parked) > 0 && q.room(len(q.parked[0].b)) {
		w := q.parked[0]
		q.parked[0] = parkedWrite{}
		q.parked = q.parked[1:]
		q.push(w.b)
		done = append(done, w.done)
	}
	if len(q.parked) == 0 {
		q.parked = nil
	}
	return done
}

// dropParked empties the parked writes and returns their callbacks. Called
// with q.mu held.
func (q *stdinQueue) dropParked() []func(error) {
	done := make([]func(error), 0, len(q.parked))
	for _, w := range q.parked {
		done = append(done, w.done)
	}
	q.parked = nil
	return done
}

func callAll(done []func(error), err error) {
	for _, f := range done {
		f(err)
	}
}

// CloseStdin closes the child's stdin pipe once every chunk queued by an
// earlier Write was written; it does not wait for that. Later writes return
// ErrStdinClosed. It returns ErrPTYStdin for a PTY process, and nil if stdin
// is already closed or was never writable.
func (p *Process) CloseStdin() error {
	if p.tty {
		return ErrPTYStdin
	}
	q := &p.stdin
	q.mu.Lock()
	if q.f == nil || q.closing || q.closed || q.exited {
		q.mu.Unlock()
		return nil
	}
	q.closing = true
	if q.writing {
		q.mu.Unlock() // the writer closes f after the last chunk
		return nil
	}
	q.closed = true
	q.wake()
	q.mu.Unlock()
	return closeFile(q.f)
}

// writeLoop drains the stdin queue and exits when it is empty. It is the
// only goroutine that writes to stdin.f.
func (p *Process) writeLoop() {
	defer p.wg.Done()
	q := &p.stdin
	for {
		q.mu.Lock()
		if len(q.chunks) == 0 || q.exited || q.closed {
			q.chunks = nil
			q.bytes = 0
			q.writing = false
			closeNow := q.closing && !q.closed && !q.exited
			if closeNow {
				q.closed = true
			}
			var failed []func(error)
			if q.closed && !q.exited {
				failed = q.dropParked()
			}
			discarded := q.dropParked() // after an exit: accepted, and dropped
			q.wake()
			q.mu.Unlock()
			callAll(failed, ErrStdinClosed)
			callAll(discarded, nil)
			if closeNow {
				if err := closeFile(q.f); err != nil {
					p.log.Debug("closing stdin", zap.Error(err))
				}
			}
			return
		}
		b := q.chunks[0]
		q.chunks[0] = nil
		q.chunks = q.chunks[1:]
		q.bytes -= len(b)
		queued := q.promote()
		q.wake()
		q.mu.Unlock()
		callAll(queued, nil)

		if _, err := q.f.Write(b); err != nil {
			q.mu.Lock()
			if !q.exited {
				q.closed = true // the child closed its end (EPIPE)
			}
			q.mu.Unlock()
			p.log.Debug("writing stdin", zap.Error(err))
		}
	}
}

// wake releases the writers waiting for space. Called with q.mu held.
func (q *stdinQueue) wake() {
	if q.space != nil {
		close(q.space)
		q.space = nil
	}
}

// stdinExited discards the queue after the child was reaped and unblocks a
// writer stuck on a full pipe or PTY: the pipe is closed (as the reference
// does when the process ends), the shared PTY master gets a past write
// deadline.
func (p *Process) stdinExited() {
	q := &p.stdin
	q.mu.Lock()
	q.exited = true
	q.chunks = nil
	q.bytes = 0
	discarded := q.dropParked()
	q.wake()
	q.mu.Unlock()
	callAll(discarded, nil)
	switch {
	case q.f == nil:
	case q.pty:
		_ = q.f.SetWriteDeadline(time.Now()) // fails only if already closed
	default:
		if err := closeFile(q.f); err != nil {
			p.log.Debug("closing stdin", zap.Error(err))
		}
	}
}

// Close releases the process. If the child is still running, or its output
// has not reached EOF, Close kills the whole tree (see Kill) first. It then
// waits for the exit, for OutputDone (at most KillGrace after the kill), and
// for every goroutine of the process, closes the remaining fds and removes
// the cgroup leaf. A descendant that outlived a normal exit and no longer
// holds the output is left alone, until TreeKiller.Close; CloseLeftovers
// hands it to the caller instead. Close is idempotent; concurrent calls
// wait for the first.
func (p *Process) Close() {
	p.closeOnce.Do(p.close)
}

// close is the body of Close, run once.
func (p *Process) close() {
	if !isClosed(p.exited) || !isClosed(p.outputDone) {
		if err := p.Kill(); err != nil {
			p.log.Warn("kill on close", zap.Error(err))
		}
	}
	<-p.exited
	<-p.outputDone
	p.stdinExited() // already done by the wait goroutine; makes Close self-contained
	if p.tty {
		_ = closeFile(p.outputs[0])
	}
	p.wg.Wait()
	if p.tree != nil {
		p.mu.Lock()
		killed, gone := p.killed, p.leafGone
		p.mu.Unlock()
		// After a kill the leaf empties within moments; otherwise a busy
		// leaf means a descendant outlived a normal exit: leave it be.
		// The usual leaf is gone already (finishOne, before wg.Wait).
		if !gone {
			p.tree.release(p.leaf, killed)
		}
	}
	p.log.Debug("process closed")
}

// setExited records the exit of the reaped child. Called once, by the wait
// goroutine.
func (p *Process) setExited(code int) {
	p.exitCode = code
	p.stdinExited()
	if p.tree != nil {
		p.tree.untrack(p.pid)
		p.settleTree(true)
	}
	reap.Done(p.pid) // reaped: orphan reapers may take this pid now
	p.exitedAt = time.Now()
	close(p.exited)
	p.log.Debug("process exited", zap.Int("code", code))
	p.finishOne()
}

// streamDone is called by each reader goroutine as it returns.
func (p *Process) streamDone() {
	p.mu.Lock()
	p.openOut--
	last := p.openOut == 0
	if last {
		if p.graceTimer != nil && p.graceTimer.Stop() {
			p.wg.Done() // the timer will never run
		}
		close(p.outputDone)
	}
	p.mu.Unlock()
	if last {
		p.finishOne()
	}
}

// finishOne counts down {exit, output EOF}. After both, the tree is normally
// empty, so the cgroup leaf is removed right away; if a descendant lingers,
// Close or the TreeKiller retries later. The caller has just closed Exited
// or OutputDone, which made their waiter runnable on this P: it yields
// first, so that the waiter (which answers a client) runs before the
// rmdirs rather than after them.
func (p *Process) finishOne() {
	p.mu.Lock()
	p.unfinished--
	done := p.unfinished == 0 && !p.leafGone
	p.mu.Unlock()
	if done && p.tree != nil {
		runtime.Gosched()
		gone := p.tree.release(p.leaf, false)
		p.mu.Lock()
		p.leafGone = gone
		p.mu.Unlock()
	}
}

// armGrace starts the KillGrace timer after which forceClose cuts the
// output streams. Called with p.mu held.
func (p *Process) armGrace() {
	if p.openOut == 0 || p.graceTimer != nil {
		return
	}
	p.wg.Add(1) // openOut > 0: readers hold the count above zero
	p.graceTimer = time.AfterFunc(KillGrace, func() {
		defer p.wg.Done()
		p.forceClose()
	})
}

// forceClose closes the parent's read ends, so the readers return even
// though a descendant that survived the kill still holds the other end.
func (p *Process) forceClose() {
	p.log.Warn("output still open after kill; closing read ends", zap.Duration("grace", KillGrace))
	for _, f := range p.outputs {
		_ = closeFile(f)
	}
}

// closeFile closes f, treating an already closed file as success.
func closeFile(f *os.File) error {
	if err := f.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return err
	}
	return nil
}

// isClosed reports whether the done channel c is closed.
func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// ExitSignal returns the signal that ended the direct child, or 0 if it
// exited by itself, has not exited, or its status was lost. A sandboxed
// command's child is the sandbox helper, which exits with 128+N instead
// of dying by the command's signal N.
func (p *Process) ExitSignal() syscall.Signal {
	select {
	case <-p.exited:
		return p.exitSignal
	default:
		return 0
	}
}
