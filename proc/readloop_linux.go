//go:build linux

// The output read loop: one goroutine per output stream turns readable
// bytes into chunks for the process's sink.

package proc

import (
	"os"
	"sync"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// readBufs holds the 64 KiB read buffers. A reader takes one only while its
// fd is readable and returns it (or hands it off) before it waits again, so
// an idle process holds no buffer. It is a cache, not state: any buffer may
// be dropped at any time.
var readBufs = sync.Pool{New: func() any { b := make([]byte, readSize); return &b }}

// readLoop copies one output stream to out until EOF or until the file is
// closed. The read buffer comes from readBufs only while data is ready.
// With a credit, a reader takes one when its stream is readable, before it
// reads, and gives it back once out returned or when it parks: a consumer
// that stalls holds at most the credit's chunks, not one per process, and
// the other readers wait holding neither a buffer nor a credit.
func (p *Process) readLoop(s Stream, f *os.File, out OutputFunc, credit *OutputCredit) {
	defer p.wg.Done()
	defer p.streamDone()
	rc, err := f.SyscallConn()
	if err != nil {
		p.log.Error("output stream not pollable", zap.Stringer("stream", s), zap.Error(err))
		return
	}
	grown := false
	held := false // this reader holds a credit
	for {
		var (
			bp       *[]byte
			n        int
			rerr     error
			waitCred bool
		)
		err := rc.Read(func(fd uintptr) bool {
			// A credit is needed before the read; without one free, go
			// back and wait for it outside the poller, holding nothing.
			if credit != nil && !held {
				if !credit.tryAcquire() {
					waitCred = true
					return true
				}
				held = true
			}
			bp = readBufs.Get().(*[]byte)
			for {
				n, rerr = unix.Read(int(fd), *bp)
				if rerr != unix.EINTR {
					break
				}
			}
			if rerr == unix.EAGAIN {
				readBufs.Put(bp)
				bp = nil
				if held {
					// Park without a credit either: an idle stream must not
					// hold one.
					credit.release()
					held = false
				}
				return false // park in the netpoller without a buffer
			}
			if s == StreamPTY && rerr == nil && n > 0 {
				n = drainPTY(int(fd), *bp, n)
			}
			if s != StreamPTY && n >= 64<<10 && !grown {
				// A full default pipe: a stream, not a trickle. Let the
				// child write further ahead and read more per call.
				grown = true
				_, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, bigPipe)
			}
			return true
		})
		if err == nil && waitCred {
			credit.acquire()
			held = true
			continue
		}
		release := func() {
			if held {
				credit.release()
				held = false
			}
		}
		if err != nil { // closed by forceClose or Close
			release()
			return
		}
		if rerr != nil || n <= 0 {
			release()
			readBufs.Put(bp)
			// EIO from a PTY master means every slave fd is closed: EOF.
			if rerr != nil && !(s == StreamPTY && rerr == unix.EIO) {
				p.log.Warn("reading output", zap.Stringer("stream", s), zap.Error(rerr))
			}
			break
		}
		// The chunk is only lent to out, which copies what it keeps; the
		// buffer goes straight back to the pool, so a stream allocates
		// nothing per read.
		out(s, (*bp)[:n])
		readBufs.Put(bp)
		release()
	}
	if s != StreamPTY { // the PTY master is also the stdin writer's; Close closes it
		_ = closeFile(f)
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
