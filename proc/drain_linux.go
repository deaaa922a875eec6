//go:build linux

// The drain at exit: once the child is reaped, the bytes it wrote before
// its exit are delivered before ExitFlushed is closed (see ExitFlushed).

package proc

import (
	"golang.org/x/sys/unix"
)

// ptyFlipBytes bounds what the kernel can hold for a PTY master beyond
// what FIONREAD counts: the flip buffer's limit (TTYB_DEFAULT_MEM_LIMIT,
// 640 KiB since Linux 4.x; pty_write blocks the writer above it).
const ptyFlipBytes = 640 << 10

// drainAtExit delivers, stream by stream, what the reaped child wrote
// before its exit, then closes exitFlushed. Called once, by the wait
// goroutine, after setExited.
func (p *Process) drainAtExit() {
	defer close(p.exitFlushed)
	for _, o := range p.outs {
		p.drainStream(o)
	}
}

// drainStream samples, under o.mu (so after any chunk in flight was
// delivered), how many bytes the stream holds, then reads and delivers up
// to that many beyond what was consumed, in steps of one buffer. Between
// steps o.mu is released and a credit is taken without it, so the reader
// may interleave its own reads (in order, and counted) and the drain never
// waits for a credit while holding the lock a credit holder may wait for.
// A PTY also gets the flip buffer's bound and stops at the first read that
// finds nothing (which flushed the flip buffer first).
func (p *Process) drainStream(o *outStream) {
	o.mu.Lock()
	if o.eof {
		o.mu.Unlock()
		return
	}
	inq, err := o.inq()
	target := o.consumed + int64(inq)
	if o.s == StreamPTY {
		target += ptyFlipBytes
	}
	o.mu.Unlock()
	if err != nil {
		return // closed: nothing more can be delivered
	}
	var wake chan struct{}
	if p.credit != nil {
		wake = make(chan struct{}, 1)
	}
	for {
		p.credit.acquire(wake)
		more := p.drainStep(o, target)
		p.credit.release()
		if !more {
			return
		}
	}
}

// drainStep reads once, at most the bytes still owed to target, and
// delivers them, all under o.mu. It reports whether more may be owed.
func (p *Process) drainStep(o *outStream, target int64) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	owed := target - o.consumed
	if o.eof || owed <= 0 {
		return false
	}
	bp := readBufs.Get().(*[]byte)
	defer readBufs.Put(bp)
	buf := *bp
	if int64(len(buf)) > owed {
		buf = buf[:owed]
	}
	n, err := o.readNow(buf)
	if err != nil || n <= 0 {
		// EAGAIN: nothing left that preceded the exit (for a PTY, after the
		// kernel flushed its flip buffer); EOF, EIO or a closed file: the
		// reader sees the end itself.
		return false
	}
	p.out(o.s, buf[:n])
	o.consumed += int64(n)
	return true
}

// inq returns the bytes readable now on the stream (FIONREAD). Called with
// o.mu held.
func (o *outStream) inq() (int, error) {
	rc, err := o.f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var ierr error
	get := func(fd uintptr) { n, ierr = unix.IoctlGetInt(int(fd), unix.TIOCINQ) } // TIOCINQ is FIONREAD
	if err := rc.Control(get); err != nil {
		return 0, err
	}
	return n, ierr
}

// readNow reads once from the non-blocking stream without parking: the
// reader goroutine may be parked in the netpoller on the same file, which
// Control does not contend with.
func (o *outStream) readNow(buf []byte) (n int, err error) {
	rc, err := o.f.SyscallConn()
	if err != nil {
		return 0, err
	}
	cerr := rc.Control(func(fd uintptr) {
		for {
			n, err = unix.Read(int(fd), buf)
			if err != unix.EINTR {
				return
			}
		}
	})
	if cerr != nil {
		return 0, cerr
	}
	return n, err
}

// OutputEnding reports whether every output stream of a pipe process has
// nothing left to deliver and no writer left (POLLHUP with nothing to
// read), so that OutputDone is about to close with no further output: the
// readers only have to see the EOF that is waiting for them. A stream
// whose reader already saw its end counts as ended. A PTY process, or a
// stream that cannot be checked, reports false. It does not consume
// anything.
func (p *Process) OutputEnding() bool {
	for _, o := range p.outs {
		if o.s == StreamPTY || !o.hungUp() {
			return false
		}
	}
	return true
}

// hungUp reports whether the pipe has no writer left and nothing unread,
// or its reader already saw its end.
func (o *outStream) hungUp() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.eof {
		return true
	}
	rc, err := o.f.SyscallConn()
	if err != nil {
		return false
	}
	ended := false
	check := func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, 0)
		if err != nil || n != 1 || fds[0].Revents&unix.POLLHUP == 0 {
			return
		}
		inq, err := unix.IoctlGetInt(int(fd), unix.TIOCINQ)
		ended = err == nil && inq == 0
	}
	if rc.Control(check) != nil {
		return false // closed by Kill or Close: not an EOF to wait for
	}
	return ended
}
