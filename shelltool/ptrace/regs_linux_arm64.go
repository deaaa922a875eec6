package ptrace

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Syscall numbers of the traced calls on this architecture.
const (
	sysExecve    = unix.SYS_EXECVE
	sysExecveat  = unix.SYS_EXECVEAT
	sysExitGroup = unix.SYS_EXIT_GROUP
)

// rewriteExitGroup turns the syscall at which tid is stopped (a seccomp
// stop) into exit_group(code): x0 holds the first argument, and the
// syscall number is changed through the NT_ARM_SYSTEM_CALL register set.
func rewriteExitGroup(tid, code int) error {
	var regs unix.PtraceRegsArm64
	if err := unix.PtraceGetRegSetArm64(tid, unix.NT_PRSTATUS, &regs); err != nil {
		return err
	}
	regs.Regs[0] = uint64(code)
	if err := unix.PtraceSetRegSetArm64(tid, unix.NT_PRSTATUS, &regs); err != nil {
		return err
	}
	nr := int32(sysExitGroup)
	iov := unix.Iovec{Base: (*byte)(unsafe.Pointer(&nr))}
	iov.SetLen(int(unsafe.Sizeof(nr)))
	_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SETREGSET, uintptr(tid),
		unix.NT_ARM_SYSTEM_CALL, uintptr(unsafe.Pointer(&iov)), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}
