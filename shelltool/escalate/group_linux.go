package escalate

import (
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// exitResult is how a child ended: code is its exit code, 128+N for a
// death by signal N.
type exitResult struct {
	code int
	err  error
}

// siginfo_t codes of SIGCHLD (<asm-generic/siginfo.h>).
const (
	cldExited = 1
	cldKilled = 2
	cldDumped = 3
)

// waitExit blocks until pid exits and returns its exit code without
// reaping it (WNOWAIT): until it is reaped, its pid and process group id
// stay ours, so a kill of the group cannot reach anyone else.
func waitExit(pid int) exitResult {
	// siginfo_t is 128 bytes; for SIGCHLD on 64-bit Linux si_code is at
	// offset 8 and si_status at 24 (after si_pid and si_uid).
	var info [128]byte
	for {
		_, _, e := unix.Syscall6(unix.SYS_WAITID, unix.P_PID, uintptr(pid),
			uintptr(unsafe.Pointer(&info[0])), unix.WEXITED|unix.WNOWAIT, 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return exitResult{err: os.NewSyscallError("waitid", e)}
		}
		break
	}
	code := *(*int32)(unsafe.Pointer(&info[8]))
	status := int(*(*int32)(unsafe.Pointer(&info[24])))
	switch code {
	case cldKilled, cldDumped:
		return exitResult{code: 128 + status}
	default: // cldExited
		return exitResult{code: status & 0xff}
	}
}

// reap collects the exited child pid.
func reap(pid int) {
	var ws unix.WaitStatus
	for {
		_, err := unix.Wait4(pid, &ws, 0, nil)
		if err != unix.EINTR {
			return
		}
	}
}

// markCloseOnExec sets FD_CLOEXEC on every descriptor above 2 of this
// process: in one close_range(2) call (Linux 5.11), else one by one.
func markCloseOnExec() {
	if unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC) == nil {
		return
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, ent := range ents {
		fd, err := strconv.Atoi(ent.Name())
		if err != nil || fd <= 2 {
			continue
		}
		if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil && fl&unix.FD_CLOEXEC == 0 {
			_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETFD, fl|unix.FD_CLOEXEC)
		}
	}
}
