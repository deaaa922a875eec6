package cli

import (
	"os"

	"golang.org/x/sys/unix"
)

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
