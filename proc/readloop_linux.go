//go:build linux

// The output read loop: one goroutine per output stream turns readable
// bytes into chunks for the process's sink.

package proc

import (
	"sync"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// readBufs holds the 64 KiB read buffers. A reader takes one only while its
// fd is readable and returns it (or hands it off) before it waits again, so
// an idle process holds no buffer. It is a cache, not state: any buffer may
// be dropped at any time.
var readBufs = sync.Pool{New: func() any { b := make([]byte, readSize); return &b }}

// readLoop copies one output stream to the process's sink until EOF or
// until the file is closed. The read buffer comes from readBufs only while
// data is ready. With a credit, a reader takes one when its stream is
// readable, before it reads, and gives it back once the sink returned or
// when it parks: a consumer that stalls holds at most the credit's chunks,
// not one per process, and the other readers wait holding neither a buffer
// nor a credit. Each read that returns bytes holds o.mu until they are
// delivered (see outStream).
func (p *Process) readLoop(o *outStream) {
	defer p.wg.Done()
	defer p.streamDone()
	s, f, credit := o.s, o.f, p.credit
	rc, err := f.SyscallConn()
	if err != nil {
		p.log.Error("output stream not pollable", zap.Stringer("stream", s), zap.Error(err))
		return
	}
	r := &streamReader{o: o, credit: credit}
	if credit != nil {
		r.wake = make(chan struct{}, 1)
	}
	read := r.read
	for {
		r.bp, r.n, r.rerr, r.waitCred = nil, 0, nil, false
		err := rc.Read(read)
		if err == nil && r.waitCred {
			credit.acquire(r.wake)
			r.held = true
			continue
		}
		if err != nil { // closed by forceClose or Close; o.mu is not held
			r.release()
			return
		}
		// o.mu is held: the read returned bytes or ended the stream.
		if r.rerr != nil || r.n <= 0 {
			o.eof = true
			o.mu.Unlock()
			r.release()
			readBufs.Put(r.bp)
			// EIO from a PTY master means every slave fd is closed: EOF.
			if r.rerr != nil && !(s == StreamPTY && r.rerr == unix.EIO) {
				p.log.Warn("reading output", zap.Stringer("stream", s), zap.Error(r.rerr))
			}
			break
		}
		// The chunk is only lent to out, which copies what it keeps; the
		// buffer goes straight back to the pool, so a stream allocates
		// nothing per read.
		p.out(s, (*r.bp)[:r.n])
		o.consumed += int64(r.n)
		o.mu.Unlock()
		readBufs.Put(r.bp)
		r.release()
	}
	if s != StreamPTY { // the PTY master is also the stdin writer's; Close closes it
		_ = closeFile(f)
	}
}

// streamReader is the state of one readLoop between polls: what the reader
// holds (a credit) and the outcome of its last read. Owned by readLoop.
type streamReader struct {
	o      *outStream
	credit *OutputCredit // nil: no credit needed
	wake   chan struct{} // hands this reader its credit when it queued for one
	held   bool          // this reader holds a credit
	grown  bool          // the pipe was enlarged (bigPipe)

	// The last read: a buffer from readBufs (nil if none was taken), the
	// byte count and error of unix.Read, and whether the reader gave up
	// the poll to wait for a credit.
	bp       *[]byte
	n        int
	rerr     error
	waitCred bool
}

// read is the callback of RawConn.Read: it takes a credit (or reports
// waitCred), then the stream's lock and a buffer, and reads once. It
// returns false, holding neither buffer, lock nor credit, when fd has
// nothing to read, so the reader parks in the netpoller. When it returns
// true after a read, it leaves o.mu locked for readLoop to deliver.
func (r *streamReader) read(fd uintptr) bool {
	// A credit is needed before the read; without one free, go
	// back and wait for it outside the poller, holding nothing.
	if r.credit != nil && !r.held {
		if !r.credit.tryAcquire() {
			r.waitCred = true
			return true
		}
		r.held = true
	}
	r.o.mu.Lock()
	r.bp = readBufs.Get().(*[]byte)
	for {
		r.n, r.rerr = unix.Read(int(fd), *r.bp)
		if r.rerr != unix.EINTR {
			break
		}
	}
	if r.rerr == unix.EAGAIN {
		r.o.mu.Unlock()
		readBufs.Put(r.bp)
		r.bp = nil
		// Park without a credit either: an idle stream must not hold one.
		r.release()
		return false // park in the netpoller without a buffer
	}
	s := r.o.s
	if s == StreamPTY && r.rerr == nil && r.n > 0 {
		r.n = drainPTY(int(fd), *r.bp, r.n)
	}
	if s != StreamPTY && r.n >= 64<<10 && !r.grown {
		// A full default pipe: a stream, not a trickle. Let the
		// child write further ahead and read more per call.
		r.grown = true
		_, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, bigPipe)
	}
	return true
}

// release gives back the reader's credit, if it holds one.
func (r *streamReader) release() {
	if r.held {
		r.credit.release()
		r.held = false
	}
}

// drainPTY keeps reading a PTY master into buf after a first read of n
// bytes, while more data is ready and buf has room for another line
// discipline buffer (4 KiB). The terminal hands data over at most 4 KiB at
// a time; gathering what is already there into one chunk saves a
// notification and a wake-up per 4 KiB under a burst, and adds no latency
// (it stops at the first EAGAIN).
func drainPTY(fd int, buf []byte, n int) int {
	for len(buf)-n >= 4096 {
		m, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil || m <= 0 {
			break // EAGAIN, or EIO/EOF that the next read reports
		}
		n += m
	}
	return n
}
