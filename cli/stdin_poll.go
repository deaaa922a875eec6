package cli

import (
	"io"
	"os"

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
