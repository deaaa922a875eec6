//go:build linux && (amd64 || arm64)

package ptrace

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// syscallInfo is the part of struct ptrace_syscall_info that a seccomp
// stop fills: the syscall number and its six arguments.
type syscallInfo struct {
	nr   uint64
	args [6]uint64
}

// getSyscallInfo reads the syscall of a tracee in a seccomp stop with
// PTRACE_GET_SYSCALL_INFO (Linux 5.3).
func getSyscallInfo(tid int) (syscallInfo, error) {
	// op u8, pad, arch u32, ip u64, sp u64, then seccomp {nr, args[6],
	// ret_data u32}.
	var buf [128]byte
	_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_GET_SYSCALL_INFO, uintptr(tid),
		uintptr(len(buf)), uintptr(unsafe.Pointer(&buf[0])), 0, 0)
	if e != 0 {
		return syscallInfo{}, fmt.Errorf("PTRACE_GET_SYSCALL_INFO: %w", e)
	}
	if buf[0] != unix.PTRACE_SYSCALL_INFO_SECCOMP {
		return syscallInfo{}, fmt.Errorf("PTRACE_GET_SYSCALL_INFO: not a seccomp stop (op %d)", buf[0])
	}
	var si syscallInfo
	si.nr = binary.NativeEndian.Uint64(buf[24:])
	for i := range si.args {
		si.args[i] = binary.NativeEndian.Uint64(buf[32+8*i:])
	}
	return si, nil
}

// seize attaches to tid with PTRACE_SEIZE and the options of a Session:
// seccomp stops, exec events, every kind of fork followed, and the tracee
// killed if the tracer thread goes away.
func seize(tid int) error {
	const opts = unix.PTRACE_O_TRACESECCOMP | unix.PTRACE_O_TRACEEXEC | unix.PTRACE_O_TRACEFORK |
		unix.PTRACE_O_TRACEVFORK | unix.PTRACE_O_TRACECLONE | unix.PTRACE_O_EXITKILL
	_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SEIZE, uintptr(tid), 0, opts, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// listen resumes a tracee in a group stop without ending the stop
// (PTRACE_LISTEN), so that SIGCONT still works as for an untraced one.
func listen(tid int) error {
	_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_LISTEN, uintptr(tid), 0, 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}
