//go:build linux

package proc

import (
	"fmt"
	"os"

	"github.com/creack/pty"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal of the given size for a TTY spawn: the
// slave becomes the child's fds 0, 1 and 2 (and, through Setctty, its
// controlling terminal), the master is the parent's only stream.
//
// The master must be non-blocking and netpoller-owned, so that a read parks
// a goroutine rather than an OS thread and Close unblocks it (docs/development.md §3.6).
// pty.Open leaves it in blocking mode (its ioctls go through File.Fd), so we
// keep a non-blocking duplicate and close the original. The slave, in
// contrast, must be blocking: the child shares its open file description.
//
// A launcher may open the terminal (Launcher.OpenPTY: the sandbox helper
// gives the command a devpts instance of its own); where it does not, or
// cannot (a server that is not root), the PTY is the host's.
func (st *stdio) openPTY(rows, cols uint16, l Launcher, log *zap.Logger) error {
	var master, slave *os.File
	var err error
	if l != nil {
		if master, slave, err = l.OpenPTY(); err != nil {
			log.Debug("no terminal from the launcher; using the host's", zap.Error(err))
		}
	}
	if err != nil || master == nil {
		if master, slave, err = pty.Open(); err != nil {
			return fmt.Errorf("open pty: %w", err)
		}
	}
	dup, err := unix.FcntlInt(master.Fd(), unix.F_DUPFD_CLOEXEC, 3)
	_ = master.Close()
	if err != nil {
		_ = slave.Close()
		return os.NewSyscallError("dup ptmx", err)
	}
	m, err := nonblockFile(dup, "/dev/ptmx")
	if err != nil {
		_ = slave.Close()
		return err
	}
	st.slave = slave
	st.outputs = []*os.File{m}
	st.streams = []Stream{StreamPTY}
	st.stdin = m

	sfd := int(slave.Fd()) // Fd also puts the slave into blocking mode
	st.child = [3]int{sfd, sfd, sfd}
	if err := unix.IoctlSetWinsize(sfd, unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols}); err != nil {
		return os.NewSyscallError("ioctl TIOCSWINSZ", err)
	}
	return nil
}

// Resize sets the terminal size of a PTY process. The kernel then sends
// SIGWINCH to the terminal's foreground process group (tty_do_resize), so
// no signal is sent here. Zero rows or cols mean the defaults (24x80).
// It returns ErrNotPTY for a pipe process.
func (p *Process) Resize(rows, cols uint16) error {
	if !p.tty {
		return ErrNotPTY
	}
	if rows == 0 {
		rows = DefaultRows
	}
	if cols == 0 {
		cols = DefaultCols
	}
	rc, err := p.outputs[0].SyscallConn()
	if err != nil {
		return fmt.Errorf("proc: resize: %w", err)
	}
	var ierr error
	err = rc.Control(func(fd uintptr) {
		ierr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols})
	})
	if err == nil && ierr != nil {
		err = os.NewSyscallError("ioctl TIOCSWINSZ", ierr)
	}
	if err != nil {
		return fmt.Errorf("proc: resize: %w", err)
	}
	return nil
}

// masterFD is the PTY master's fd in PTY mode, else -1. It does not
// change the file's blocking mode, as Fd would.
func (st *stdio) masterFD() int {
	fd := -1
	if st.slave == nil || st.stdin == nil {
		return fd
	}
	if rc, err := st.stdin.SyscallConn(); err == nil {
		_ = rc.Control(func(f uintptr) { fd = int(f) })
	}
	return fd
}
