//go:build linux && (amd64 || arm64)

package ptrace

import (
	"context"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// takeFDs duplicates the descriptors nums of tid's process into ours with
// pidfd_getfd (close-on-exec). A descriptor the process does not have is
// nil; an error means the process could not be reached at all.
func takeFDs(tid int, nums ...int) ([]*os.File, error) {
	tgid, err := statusField(tid, "Tgid")
	if err != nil {
		return nil, err
	}
	pidfd, err := unix.PidfdOpen(tgid, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(pidfd)
	files := make([]*os.File, len(nums))
	for i, n := range nums {
		fd, err := unix.PidfdGetfd(pidfd, n, 0)
		if err != nil {
			continue // EBADF: not open there
		}
		files[i] = os.NewFile(uintptr(fd), "tracee-fd-"+strconv.Itoa(n))
	}
	return files, nil
}

// closeAll closes the non-nil files.
func closeAll(files []*os.File) {
	for _, f := range files {
		if f != nil {
			f.Close()
		}
	}
}

// writeAll writes msg to f, waiting for room at most while ctx lasts: a
// full pipe nobody reads must not hold a worker past the call.
func writeAll(ctx context.Context, f *os.File, msg string) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	b := []byte(msg)
	for len(b) > 0 && ctx.Err() == nil {
		var n int
		var werr error
		ready := false
		_ = rc.Control(func(fd uintptr) {
			pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
			if k, _ := unix.Poll(pfd, int(50*time.Millisecond/time.Millisecond)); k > 0 {
				ready = true
				n, werr = unix.Write(int(fd), b)
			}
		})
		if !ready {
			continue
		}
		if werr != nil && werr != unix.EAGAIN && werr != unix.EINTR {
			return
		}
		if n > 0 {
			b = b[n:]
		}
	}
}
