//go:build linux

// Reaping the child: waitid(2) on a pidfd where the kernel has one, a
// blocking waitid otherwise, and the decoding of its siginfo.

package proc

import (
	"syscall"
	"unsafe"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// waitLoop waits for the child to exit and reaps it. The pidfd is polled
// by the netpoller, so no OS thread blocks per child; without a usable
// pidfd it falls back to a blocking waitid.
func (p *Process) waitLoop(pidfd int) {
	defer p.wg.Done()
	code, ok := -1, false
	if pidfd >= 0 {
		code, ok = p.waitPidfd(pidfd)
	}
	if !ok {
		code = p.waitBlocking()
	}
	p.setExited(code)
	p.drainAtExit()
}

// waitPidfd reaps the child once its pidfd polls readable. ok is false if
// the pidfd cannot be polled.
func (p *Process) waitPidfd(pidfd int) (code int, ok bool) {
	f, err := nonblockFile(pidfd, "pidfd")
	if err != nil {
		return -1, false
	}
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return -1, false
	}
	code = -1
	reaped := false
	err = rc.Read(func(fd uintptr) bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		var si siginfo
		err := waitid(unix.P_PIDFD, int(fd), &si, unix.WEXITED|unix.WNOHANG)
		for err == unix.EINTR {
			err = waitid(unix.P_PIDFD, int(fd), &si, unix.WEXITED|unix.WNOHANG)
		}
		if err == unix.EAGAIN {
			return false // a non-blocking pidfd may say EAGAIN instead of si.pid == 0
		}
		if err != nil {
			// ECHILD: reaped behind our back (e.g. by a foreign SIGCHLD
			// reaper). The exit status is lost.
			p.log.Warn("waitid", zap.Error(err))
			p.reaped, reaped = true, true
			return true
		}
		if si.pid == 0 {
			return false // still running
		}
		p.reaped, reaped = true, true
		code, p.exitSignal = si.exitCode(), si.signal()
		return true
	})
	if err != nil && !reaped {
		return -1, false
	}
	return code, true
}

// waitBlocking waits without reaping (WNOWAIT), which blocks an OS thread,
// then reaps under p.mu so that Signal never targets a reaped pid.
func (p *Process) waitBlocking() int {
	var si siginfo
	for {
		err := waitid(unix.P_PID, p.pid, &si, unix.WEXITED|unix.WNOWAIT)
		if err != unix.EINTR {
			break
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reaped = true
	si = siginfo{}
	if err := waitid(unix.P_PID, p.pid, &si, unix.WEXITED|unix.WNOHANG); err != nil || si.pid == 0 {
		return -1
	}
	p.exitSignal = si.signal()
	return si.exitCode()
}

// siginfoPad is the padding before the siginfo union: it is pointer-aligned.
const siginfoPad = unsafe.Sizeof(uintptr(0)) - 4

// siginfo is the SIGCHLD view of the kernel's siginfo_t, which
// unix.Siginfo leaves opaque (waitid(2)).
type siginfo struct {
	signo, errno, code int32
	_                  [siginfoPad]byte
	pid                int32
	uid                uint32
	status             int32
	_                  [128 - 24 - siginfoPad]byte
}

// si_code values for SIGCHLD (<asm-generic/siginfo.h>).
const (
	cldExited = 1
	cldKilled = 2
	cldDumped = 3
)

// exitCode maps a CLD_* code to the exit code of docs/protocol.md §7.7.
func (si *siginfo) exitCode() int {
	switch si.code {
	case cldExited:
		return int(si.status)
	case cldKilled, cldDumped:
		return 128 + int(si.status)
	}
	return -1
}

// signal returns the signal that ended the child, or 0 if it exited.
func (si *siginfo) signal() syscall.Signal {
	if si.code == cldKilled || si.code == cldDumped {
		return syscall.Signal(si.status)
	}
	return 0
}

// waitid is waitid(2) with a siginfo that exposes the SIGCHLD fields.
func waitid(idtype, id int, si *siginfo, options int) error {
	_, _, e := unix.Syscall6(unix.SYS_WAITID, uintptr(idtype), uintptr(id),
		uintptr(unsafe.Pointer(si)), uintptr(options), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}
