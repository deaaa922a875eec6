package unifiedexec

import (
	"os"

	"golang.org/x/sys/unix"
)

// serverPipeBytes is the capacity asked for the pipe carrying the
// supervised server's output: 1 MiB, the default limit for unprivileged
// users (/proc/sys/fs/pipe-max-size). With the default 64 KiB, each large
// process/output line crosses the pipe in several pieces, each a wake-up
// of both processes.
const serverPipeBytes = 1 << 20

// growPipe raises the capacity of the pipe behind f, best effort: the
// default capacity still works, only slower.
func growPipe(f *os.File) {
	if sc, err := f.SyscallConn(); err == nil {
		_ = sc.Control(func(fd uintptr) {
			_, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, serverPipeBytes)
		})
	}
}
