package cli

import (
	"context"
	"errors"
	"io"
	"os"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// pollableStdin returns what a stdio server reads its requests from. When
// stdin is a pipe or a socket, as a client that starts the server gives
// it, that is a duplicate of descriptor 0 in non-blocking mode, read
// through the Go poller: closing it ends a read in progress, so a signal
// ends the server although the client keeps its end open. restore puts
// descriptor 0 back in blocking mode (the mode is shared by every
// duplicate) and closes the duplicate. Any other stdin (a terminal, which
// a shell shares and would find non-blocking after a SIGKILL; a file) is
// os.Stdin, read by blocking reads.
func pollableStdin() (r io.Reader, restore func()) {
	var st unix.Stat_t
	if err := unix.Fstat(0, &st); err != nil {
		return os.Stdin, func() {}
	}
	if t := st.Mode & unix.S_IFMT; t != unix.S_IFIFO && t != unix.S_IFSOCK {
		return os.Stdin, func() {}
	}
	flags, err := unix.FcntlInt(0, unix.F_GETFL, 0)
	if err != nil {
		return os.Stdin, func() {}
	}
	wasNonblock := flags&unix.O_NONBLOCK != 0
	fd, err := unix.FcntlInt(0, unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return os.Stdin, func() {}
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		_ = unix.Close(fd)
		return os.Stdin, func() {}
	}
	f := os.NewFile(uintptr(fd), "stdin") // non-blocking: registered with the poller
	return f, func() {
		_ = f.Close()
		if !wasNonblock {
			_ = unix.SetNonblock(0, false)
		}
	}
}

// watchStdinClose watches file descriptor fd (stdin) for end of file, for
// --exit-on-stdin-close: what the watch reads is dropped. closed is closed
// when a read returns end of file or fails; stop ends the watch and waits
// for its goroutine. The watch polls fd together with a wake-up pipe, so
// stop never waits on a blocked read and fd keeps its blocking mode (a
// terminal shared with a shell must not be left non-blocking).
func watchStdinClose(fd int) (closed <-chan struct{}, stop func(), err error) {
	var wake [2]int
	if err := unix.Pipe2(wake[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, err
	}
	eof := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer unix.Close(wake[0])
		if stdinEnds(fd, wake[0]) {
			close(eof)
		}
	}()
	return eof, func() {
		_ = unix.Close(wake[1]) // the read end sees a hang-up
		<-done
	}, nil
}

// stdinEnds reads fd until end of file (true) or until wake becomes
// readable or hangs up (false). A read error counts as end of file.
func stdinEnds(fd, wake int) bool {
	buf := make([]byte, 4096)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(wake), Events: unix.POLLIN}}
	for {
		fds[0].Revents, fds[1].Revents = 0, 0
		if _, err := unix.Poll(fds, -1); err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return true
		}
		if fds[1].Revents != 0 {
			return false
		}
		if fds[0].Revents&unix.POLLNVAL != 0 {
			return true
		}
		if fds[0].Revents == 0 {
			continue
		}
		n, err := unix.Read(fd, buf)
		switch {
		case errors.Is(err, unix.EINTR), errors.Is(err, unix.EAGAIN):
		case err != nil, n == 0:
			return true
		}
	}
}

// stdinReadable reports whether forwarding f is worth it: it is open, not
// write-only and not /dev/null. A closed or /dev/null stdin gives the
// command /dev/null without a copier, as `ssh -n` does.
func stdinReadable(f *os.File) bool {
	fd := int(f.Fd())
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil || flags&unix.O_ACCMODE == unix.O_WRONLY {
		return false
	}
	var st, null unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return false
	}
	if unix.Stat(os.DevNull, &null) == nil && st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == null.Rdev {
		return false
	}
	return true
}

// exitOnStdinClose returns a context that ends with ctx or when stdin
// reaches end of file (--exit-on-stdin-close), and a function that stops
// the watch and waits for it.
func exitOnStdinClose(ctx context.Context, logger *zap.Logger) (context.Context, func(), error) {
	closed, stopWatch, err := watchStdinClose(0) // fd 0 itself: os.Stdin.Fd would make it blocking
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-closed:
			logger.Info("stdin closed; shutting down (--exit-on-stdin-close)")
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		cancel()
		<-done
		stopWatch()
	}, nil
}
