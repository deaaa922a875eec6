//go:build linux

// The child's standard streams: pipes or a PTY, the parent's and child's
// ends of each, and the close-on-exec sweep of inherited descriptors.

package proc

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// stdio holds the fds of one spawn: the child's 0, 1 and 2, and the
// parent's ends. Owned by Start until handed to the Process.
type stdio struct {
	child    [3]int     // the child's fds 0, 1, 2 (may repeat); closed by closeChild
	childOwn []int      // distinct fds in child to close
	slave    *os.File   // PTY slave (also in child); closed by closeChild
	outputs  []*os.File // parent read ends, non-blocking
	streams  []Stream   // the stream of each output
	stdin    *os.File   // parent write end: stdin pipe or PTY master; nil for /dev/null
}

// openPipes creates the stdout and stderr pipes, and a stdin pipe or
// /dev/null. The parent's ends are non-blocking and owned by the netpoller;
// the child's ends stay blocking, as programs expect.
func (st *stdio) openPipes(pipeStdin bool) error {
	if pipeStdin {
		r, w, err := pipe()
		if err != nil {
			return err
		}
		st.addChild(0, r)
		if st.stdin, err = nonblockFile(w, "stdin"); err != nil {
			return err
		}
	} else {
		fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return &os.PathError{Op: "open", Path: "/dev/null", Err: err}
		}
		st.addChild(0, fd)
	}
	for i, s := range []Stream{StreamStdout, StreamStderr} {
		r, w, err := pipe()
		if err != nil {
			return err
		}
		st.addChild(1+i, w)
		f, err := nonblockFile(r, s.String())
		if err != nil {
			return err
		}
		st.outputs = append(st.outputs, f)
		st.streams = append(st.streams, s)
	}
	return nil
}

// addChild makes fd the child's fd i; closeChild closes it after the fork.
func (st *stdio) addChild(i, fd int) {
	st.child[i] = fd
	st.childOwn = append(st.childOwn, fd)
}

// closeChild closes the parent's copies of the child's fds.
func (st *stdio) closeChild() {
	for _, fd := range st.childOwn {
		_ = unix.Close(fd)
	}
	st.childOwn = nil
	if st.slave != nil {
		_ = st.slave.Close()
		st.slave = nil
	}
}

// closeParent closes the parent's ends after a failed start.
func (st *stdio) closeParent() {
	for _, f := range st.outputs {
		_ = f.Close()
	}
	if st.stdin != nil && !st.isOutput(st.stdin) {
		_ = st.stdin.Close()
	}
}

// isOutput reports whether f is one of the output files (the PTY master
// is both output and stdin).
func (st *stdio) isOutput(f *os.File) bool {
	for _, o := range st.outputs {
		if o == f {
			return true
		}
	}
	return false
}

// pipe returns a close-on-exec pipe.
func pipe() (r, w int, err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return -1, -1, os.NewSyscallError("pipe2", err)
	}
	return p[0], p[1], nil
}

// nonblockFile wraps fd in an *os.File registered with the netpoller. On
// error fd is closed.
func nonblockFile(fd int, name string) (*os.File, error) {
	if err := unix.SetNonblock(fd, true); err != nil {
		_ = unix.Close(fd)
		return nil, os.NewSyscallError("fcntl", err)
	}
	return os.NewFile(uintptr(fd), name), nil
}

// cloexecInherited sets FD_CLOEXEC on every fd above 2 that lacks it. Go
// creates all its fds close-on-exec, but fds inherited by the server (or made
// by a raw dup) are not, and syscall.ForkExec cannot close_range in the
// child. Setting the flag never affects explicit fd passing, which dup2s.
func cloexecInherited() error {
	return eachFD("/proc/self/fd", func(_, fd int) {
		if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil && fl&unix.FD_CLOEXEC == 0 {
			_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETFD, fl|unix.FD_CLOEXEC)
		}
	})
}

// eachFD lists the fds above 2 in dir (/proc/self/fd or
// /proc/thread-self/fd), leaving out its own, then calls f with each and
// the directory's fd, still open.
func eachFD(dir string, f func(dfd, fd int)) error {
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(dfd)
	var fds []int
	var buf [4096]byte
	for {
		n, err := unix.ReadDirent(dfd, buf[:])
		if err != nil {
			return os.NewSyscallError("getdents", err)
		}
		if n == 0 {
			break
		}
		_, _, names := unix.ParseDirent(buf[:n], -1, nil)
		for _, name := range names {
			if fd, err := strconv.Atoi(name); err == nil && fd > 2 && fd != dfd {
				fds = append(fds, fd)
			}
		}
	}
	for _, fd := range fds {
		f(dfd, fd)
	}
	return nil
}

// markCloexec sets FD_CLOEXEC on every fd above 2 in one close_range(2)
// call (Linux 5.11+), falling back to the /proc walk on older kernels.
func markCloexec() error {
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err == nil {
		return nil
	}
	return cloexecInherited()
}
