package escalate

import (
	"bytes"
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
// reaping it (WNOWAIT): while it is a zombie, its pid and process group
// id stay ours, so the group can still be killed safely.
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

// groupHasOthers reports whether a process other than leader is in the
// process group leader (read from /proc: Linux keeps no cheaper index).
func groupHasOthers(leader int) bool {
	d, err := os.Open("/proc")
	if err != nil {
		return true // cannot tell: keep the group reachable
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return true
	}
	self := strconv.Itoa(leader)
	for _, name := range names {
		if name == self || name[0] < '0' || name[0] > '9' {
			continue
		}
		if pgrpOf(name) == leader {
			return true
		}
	}
	return false
}

// pgrpOf returns the process group of the process /proc/<pid>, or -1.
func pgrpOf(pid string) int {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return -1
	}
	// Fields after the command name, which ends at the last ')':
	// state ppid pgrp ...
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return -1
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 3 {
		return -1
	}
	n, err := strconv.Atoi(string(f[2]))
	if err != nil {
		return -1
	}
	return n
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
