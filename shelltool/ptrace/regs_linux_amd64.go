package ptrace

import "golang.org/x/sys/unix"

// Syscall numbers of the traced calls on this architecture.
const (
	sysExecve    = unix.SYS_EXECVE
	sysExecveat  = unix.SYS_EXECVEAT
	sysExitGroup = unix.SYS_EXIT_GROUP
)

// rewriteExitGroup turns the syscall at which tid is stopped (a seccomp
// stop) into exit_group(code).
func rewriteExitGroup(tid, code int) error {
	var regs unix.PtraceRegs
	if err := unix.PtraceGetRegs(tid, &regs); err != nil {
		return err
	}
	regs.Orig_rax = sysExitGroup
	regs.Rdi = uint64(code)
	return unix.PtraceSetRegs(tid, &regs)
}
