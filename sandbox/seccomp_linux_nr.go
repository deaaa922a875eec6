//go:build linux && (amd64 || arm64)

package sandbox

import "golang.org/x/sys/unix"

// seccompNumbers maps the syscall names of the filter to the numbers of
// the architecture being built (x86_64 and aarch64 share the names).
func seccompNumbers() map[string]uint32 {
	return map[string]uint32{
		"io_uring_setup":     unix.SYS_IO_URING_SETUP,
		"io_uring_enter":     unix.SYS_IO_URING_ENTER,
		"io_uring_register":  unix.SYS_IO_URING_REGISTER,
		"ptrace":             unix.SYS_PTRACE,
		"process_vm_readv":   unix.SYS_PROCESS_VM_READV,
		"process_vm_writev":  unix.SYS_PROCESS_VM_WRITEV,
		"connect":            unix.SYS_CONNECT,
		"accept":             unix.SYS_ACCEPT,
		"accept4":            unix.SYS_ACCEPT4,
		"bind":               unix.SYS_BIND,
		"listen":             unix.SYS_LISTEN,
		"getpeername":        unix.SYS_GETPEERNAME,
		"getsockname":        unix.SYS_GETSOCKNAME,
		"shutdown":           unix.SYS_SHUTDOWN,
		"sendto":             unix.SYS_SENDTO,
		"sendmmsg":           unix.SYS_SENDMMSG,
		"recvmmsg":           unix.SYS_RECVMMSG,
		"getsockopt":         unix.SYS_GETSOCKOPT,
		"setsockopt":         unix.SYS_SETSOCKOPT,
		"socket":             unix.SYS_SOCKET,
		"socketpair":         unix.SYS_SOCKETPAIR,
		"ioctl":              unix.SYS_IOCTL,
		"add_key":            unix.SYS_ADD_KEY,
		"keyctl":             unix.SYS_KEYCTL,
		"request_key":        unix.SYS_REQUEST_KEY,
		"pidfd_getfd":        unix.SYS_PIDFD_GETFD,
		"kcmp":               unix.SYS_KCMP,
		"execve":             unix.SYS_EXECVE,
		"execveat":           unix.SYS_EXECVEAT,
		"clone3":             unix.SYS_CLONE3,
		"openat2":            unix.SYS_OPENAT2,
		"fchmod":             unix.SYS_FCHMOD,
		"fchmodat":           unix.SYS_FCHMODAT,
		"fchmodat2":          unix.SYS_FCHMODAT2,
		"openat":             unix.SYS_OPENAT,
		"mknodat":            unix.SYS_MKNODAT,
		"prlimit64":          unix.SYS_PRLIMIT64,
		"sched_setaffinity":  unix.SYS_SCHED_SETAFFINITY,
		"sched_setscheduler": unix.SYS_SCHED_SETSCHEDULER,
		"sched_setparam":     unix.SYS_SCHED_SETPARAM,
		"sched_setattr":      unix.SYS_SCHED_SETATTR,
		"setpriority":        unix.SYS_SETPRIORITY,
		"ioprio_set":         unix.SYS_IOPRIO_SET,
	}
}
