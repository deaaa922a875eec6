package cli

import (
	"errors"

	"golang.org/x/sys/unix"
)

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
