package escalate

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// fdConn is a msgConn on a raw descriptor in blocking mode: the wrapper's
// side, which has nothing else to do while it waits. It does not own fd.
type fdConn int

func (c fdConn) sendmsg(p, oob []byte) (int, error) {
	for {
		n, err := unix.SendmsgN(int(c), p, oob, nil, unix.MSG_NOSIGNAL)
		if err != unix.EINTR {
			return n, err
		}
	}
}

func (c fdConn) recvmsg(p, oob []byte) (int, int, int, error) {
	for {
		n, oobn, flags, _, err := unix.Recvmsg(int(c), p, oob, unix.MSG_CMSG_CLOEXEC)
		if err != unix.EINTR {
			return n, oobn, flags, err
		}
	}
}

// pollConn is a msgConn on a non-blocking descriptor registered with the
// Go poller: the server's side. Waits honour the deadlines of the file or
// connection rc comes from, which is how cancellation reaches them.
type pollConn struct{ rc syscall.RawConn }

func (c pollConn) sendmsg(p, oob []byte) (n int, err error) {
	werr := c.rc.Write(func(fd uintptr) bool {
		for {
			n, err = unix.SendmsgN(int(fd), p, oob, nil, unix.MSG_NOSIGNAL|unix.MSG_DONTWAIT)
			if err != unix.EINTR {
				return err != unix.EAGAIN
			}
		}
	})
	if werr != nil {
		return 0, werr
	}
	return n, err
}

func (c pollConn) recvmsg(p, oob []byte) (n, oobn, flags int, err error) {
	rerr := c.rc.Read(func(fd uintptr) bool {
		for {
			n, oobn, flags, _, err = unix.Recvmsg(int(fd), p, oob, unix.MSG_CMSG_CLOEXEC|unix.MSG_DONTWAIT)
			if err != unix.EINTR {
				return err != unix.EAGAIN
			}
		}
	})
	if rerr != nil {
		return 0, 0, 0, rerr
	}
	return n, oobn, flags, err
}

// peerClosed waits until the socket has data or reports EOF or an error,
// without consuming anything, and reports whether the peer is gone. It
// returns false when the wait is cut by a deadline or a close of ours.
func (c pollConn) peerClosed() bool {
	var b [1]byte
	var n int
	var err error
	rerr := c.rc.Read(func(fd uintptr) bool {
		for {
			n, _, _, _, err = unix.Recvmsg(int(fd), b[:], nil, unix.MSG_PEEK|unix.MSG_DONTWAIT)
			if err != unix.EINTR {
				return err != unix.EAGAIN
			}
		}
	})
	return rerr == nil && (err != nil || n == 0)
}

// newPollFile makes fd non-blocking and wraps it in a pollable *os.File
// that owns it (closes it on Close). On error fd is closed.
func newPollFile(fd int, name string) (*os.File, pollConn, error) {
	if err := unix.SetNonblock(fd, true); err != nil {
		_ = unix.Close(fd)
		return nil, pollConn{}, os.NewSyscallError("fcntl", err)
	}
	f := os.NewFile(uintptr(fd), name)
	rc, err := f.SyscallConn()
	if err != nil {
		_ = f.Close()
		return nil, pollConn{}, err
	}
	return f, pollConn{rc}, nil
}

// NewSocketPair returns the two ends of a new Unix datagram socketpair,
// both close-on-exec: server for Serve (non-blocking, pollable) and child
// for the command, which the caller passes on (os/exec ExtraFiles clears
// close-on-exec on the child's copy) and names in CODEX_ESCALATE_SOCKET.
// The caller owns and closes both.
func NewSocketPair() (server, child *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, os.NewSyscallError("socketpair", err)
	}
	server, _, err = newPollFile(fds[0], "escalate-server")
	if err != nil {
		_ = unix.Close(fds[1])
		return nil, nil, err
	}
	return server, os.NewFile(uintptr(fds[1]), "escalate-child"), nil
}

// isClosed reports whether err means our own side of the socket was
// closed or timed out (cancellation), as opposed to a peer failure.
func isClosed(err error) bool {
	return errors.Is(err, os.ErrClosed) || errors.Is(err, os.ErrDeadlineExceeded)
}
