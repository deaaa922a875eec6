//go:build linux

package sandbox

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// PTSFD is the helper's fd that carries the devpts mount of a plan with
// Plan.PTSFD set: the file right after the plan (ExtraFiles[1]).
const PTSFD = planFD + 1

// devptsOptions are the options of every devpts instance we create.
var devptsOptions = map[string]string{"ptmxmode": "0666", "mode": "0620"}

// OpenPTY opens a pseudo-terminal in a devpts instance of its own, for a
// sandboxed TTY command whose helper builds a new /dev (Plan.ReplacesDev).
// The spawner gives the slave to the helper as fds 0-2, sets Plan.PTSFD to
// PTSFD and passes mount, a detached mount of the instance, as the file
// after the plan; the helper mounts it on the command's /dev/pts. The
// command then finds its terminal there (ttyname works), can open new
// PTYs in the same instance, and sees no terminal of the host.
//
// master and slave are blocking files; the caller closes all three (mount
// right after the spawn). It needs CAP_SYS_ADMIN (fsopen): a server that
// is not root gets an error and uses a PTY of the host's instance.
func OpenPTY() (master, slave, mount *os.File, err error) {
	mfd, err := newFS("devpts", devptsOptions, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return nil, nil, nil, err
	}
	mount = os.NewFile(uintptr(mfd), "devpts")
	pfd, err := unix.Openat(mfd, "ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		mount.Close()
		return nil, nil, nil, os.NewSyscallError("open ptmx", err)
	}
	master = os.NewFile(uintptr(pfd), "ptmx")
	fail := func(what string, err error) (*os.File, *os.File, *os.File, error) {
		master.Close()
		mount.Close()
		return nil, nil, nil, os.NewSyscallError(what, err)
	}
	if err := unix.IoctlSetPointerInt(pfd, unix.TIOCSPTLCK, 0); err != nil {
		return fail("ioctl TIOCSPTLCK", err)
	}
	sfd, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(pfd), unix.TIOCGPTPEER, uintptr(unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC))
	if errno != 0 {
		return fail("ioctl TIOCGPTPEER", errno)
	}
	n, err := unix.IoctlGetInt(pfd, unix.TIOCGPTN)
	if err != nil {
		unix.Close(int(sfd))
		return fail("ioctl TIOCGPTN", err)
	}
	return master, os.NewFile(sfd, fmt.Sprintf("/dev/pts/%d", n)), mount, nil
}

// ReplacesDev reports whether the helper gives the command a /dev of its
// own (a mount namespace, which Wrap adds for any mount work or a PID
// namespace). A nil plan replaces nothing.
func (p *Plan) ReplacesDev() bool {
	return p != nil && (p.NewMountNS || p.needsMounts() || p.NewPIDNS)
}
