//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// seccompArch describes the architecture a filter is built for.
type seccompArch struct {
	// audit is the AUDIT_ARCH_* value the kernel reports in seccomp_data.
	audit uint32
	// x32 is set on x86_64, where syscall numbers with bit 30 set belong to
	// the x32 ABI and must be rejected (they would bypass a deny list).
	x32 bool
	// nr maps the syscall names of the filter to this arch's numbers.
	nr map[string]uint32
}

// Offsets into struct seccomp_data (<linux/seccomp.h>). The kernel loads
// in native byte order; both supported arches are little-endian, so the
// low 32 bits of args[0] are at 16.
const (
	seccompOffNr   = 0
	seccompOffArch = 4
	seccompOffArg0 = 16
)

const (
	afUnix  = 1  // AF_UNIX
	afVsock = 40 // AF_VSOCK
)

// seccompAlwaysDenied are denied by every filter: io_uring can create
// sockets without socket(2) (sandbox.md §4.4).
var seccompAlwaysDenied = []string{"io_uring_setup", "io_uring_enter", "io_uring_register"}

// seccompNetDenied are denied by the Restricted filter, for every socket
// family: connect and bind fail even for AF_UNIX, so only pre-connected
// Unix sockets and socketpairs work. recvfrom, sendmsg, recvmsg, read and
// write stay allowed.
var seccompNetDenied = []string{
	"ptrace", "process_vm_readv", "process_vm_writev",
	"connect", "accept", "accept4", "bind", "listen", "getpeername", "getsockname",
	"shutdown", "sendto", "sendmmsg", "recvmmsg", "getsockopt", "setsockopt",
}

// seccompProgram builds the network filter for mode (sandbox.md §4.4): a
// foreign architecture kills the process, x32 numbers and denied syscalls
// return EPERM, everything else is allowed. For Restricted, socket and
// socketpair are denied unless the domain (compared as 32 bits) is
// AF_UNIX; for VMSocketRestricted they are denied for AF_VSOCK only.
func seccompProgram(mode SeccompMode, a seccompArch) ([]bpf.Instruction, error) {
	eperm := bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)}
	allow := bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW}
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: seccompOffArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: a.audit, SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_KILL_PROCESS},
		bpf.LoadAbsolute{Off: seccompOffNr, Size: 4},
	}
	if a.x32 {
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: 0x40000000, SkipFalse: 1}, eperm)
	}
	denied := seccompAlwaysDenied
	switch mode {
	case SeccompRestricted:
		denied = append(denied[:len(denied):len(denied)], seccompNetDenied...)
	case SeccompVMSocketRestricted:
	default:
		return nil, fmt.Errorf("seccomp: unknown mode %q", mode)
	}
	for _, name := range denied {
		nr, ok := a.nr[name]
		if !ok {
			return nil, fmt.Errorf("seccomp: no syscall number for %s", name)
		}
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipFalse: 1}, eperm)
	}
	// socket/socketpair: load the domain and decide; anything else skips
	// the four instructions of the domain check and is allowed.
	prog = append(prog,
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: a.nr["socket"], SkipTrue: 1},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: a.nr["socketpair"], SkipFalse: 3},
		bpf.LoadAbsolute{Off: seccompOffArg0, Size: 4},
	)
	if mode == SeccompRestricted {
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: afUnix, SkipTrue: 1})
	} else {
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: afVsock, SkipFalse: 1})
	}
	return append(prog, eperm, allow), nil
}

// installSeccomp installs the filter for mode on every thread of the
// helper (SECCOMP_FILTER_FLAG_TSYNC), so the command and the in-process fs
// helper inherit it. no_new_privs must already be set. SeccompNone
// installs nothing.
func installSeccomp(mode SeccompMode) error {
	if mode == SeccompNone {
		return nil
	}
	a, err := nativeSeccompArch()
	if err != nil {
		return err
	}
	prog, err := seccompProgram(mode, a)
	if err != nil {
		return err
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return fmt.Errorf("seccomp: assemble: %w", err)
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		filter[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	r, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(filter)
	if e != 0 {
		return fmt.Errorf("seccomp: %w", os.NewSyscallError("seccomp", e))
	}
	if r != 0 {
		return fmt.Errorf("seccomp: thread %d could not be synchronized", r)
	}
	return nil
}

// seccompAvailable reports whether the kernel supports seccomp filters
// with the actions the filter uses.
func seccompAvailable() error {
	if _, err := nativeSeccompArch(); err != nil {
		return err
	}
	for _, action := range []uint32{unix.SECCOMP_RET_ERRNO, unix.SECCOMP_RET_KILL_PROCESS} {
		act := action
		_, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&act)))
		if e != 0 {
			return fmt.Errorf("seccomp filters are not available: %w", os.NewSyscallError("seccomp", e))
		}
	}
	return nil
}
