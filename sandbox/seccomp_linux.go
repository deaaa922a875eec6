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
// low 32 bits of args[0] are at 16 and those of args[1] at 24.
const (
	seccompOffNr   = 0
	seccompOffArch = 4
	seccompOffArg0 = 16
	seccompOffArg1 = 24
)

const (
	afUnix  = 1  // AF_UNIX
	afInet  = 2  // AF_INET
	afInet6 = 10 // AF_INET6
	afVsock = 40 // AF_VSOCK

	sockStream = 1 // SOCK_STREAM
	sockDgram  = 2 // SOCK_DGRAM
	sockRaw    = 3 // SOCK_RAW: for AF_UNIX, a datagram socket as well
	// sockTypeMask clears SOCK_NONBLOCK and SOCK_CLOEXEC from socket's
	// type argument, leaving the socket type.
	sockTypeMask = ^uint32(unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC)

	tiocsti   = 0x5412 // TIOCSTI: push a byte into a terminal's input
	tioclinux = 0x541C // TIOCLINUX: console selection can do the same
)

// seccompAlwaysDenied are denied by every filter the helper installs (the
// base filter included): io_uring can create sockets without socket(2)
// (docs/sandbox.md §4.4); the kernel keyring is shared with the host (a
// command would read the host's keys and plant its own); pidfd_getfd and
// kcmp reach into other processes' file tables, the helper's included.
var seccompAlwaysDenied = []string{
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"add_key", "keyctl", "request_key",
	"pidfd_getfd", "kcmp",
}

// seccompNoSys answer ENOSYS in every filter, so that libc falls back to
// the older call whose arguments the filter can see: clone3 takes its
// flags in a struct (CLONE_INTO_CGROUP would move a child out of the
// command's cgroup leaf: out of its limits, its unix-send filter and the
// server's peer check), and openat2 its mode (a set-user-ID file, below).
var seccompNoSys = []string{"clone3", "openat2"}

// setIDBits are S_ISUID and S_ISGID. The command runs as the server's uid,
// often root: a set-user-ID file it leaves in a writable root would give
// any local user that uid. No capability is needed to set the bits on a
// file one owns, and Landlock does not cover chmod, so the filter refuses
// them in every call that sets a file mode.
const setIDBits = unix.S_ISUID | unix.S_ISGID

// seccompModeArgs are the calls that set a file mode, with the index of
// their mode argument. legacy calls exist on x86_64 only.
var seccompModeArgs = []struct {
	name   string
	arg    uint32
	legacy bool
}{
	{"fchmod", 1, false}, {"fchmodat", 2, false}, {"fchmodat2", 2, false},
	{"openat", 3, false}, {"mknodat", 2, false},
	{"chmod", 1, true}, {"creat", 1, true}, {"open", 2, true}, {"mknod", 1, true},
}

// seccompTraced go to the ptrace tracer when exec is traced
// (Plan.TraceExecFD). Without a tracer the kernel fails them with ENOSYS.
var seccompTraced = []string{"execve", "execveat"}

// seccompTraceDenied are denied when exec is traced, whatever the mode: a
// command must not detach from or attach to a tracer, nor change the
// memory of another process of its call between its tracer's decision
// and the kernel's read of the exec's arguments.
var seccompTraceDenied = []string{"ptrace", "process_vm_readv", "process_vm_writev"}

// seccompNetDenied are denied by the Restricted filter, for every socket
// family: connect and bind fail even for AF_UNIX, so only pre-connected
// Unix sockets and socketpairs work. recvfrom, sendmsg, recvmsg, read and
// write stay allowed.
var seccompNetDenied = []string{
	"ptrace", "process_vm_readv", "process_vm_writev",
	"connect", "accept", "accept4", "bind", "listen", "getpeername", "getsockname",
	"shutdown", "sendto", "sendmmsg", "recvmmsg", "getsockopt", "setsockopt",
}

// seccompProgram builds the filter for mode (docs/sandbox.md §4.4): a foreign
// architecture kills the process; x32 numbers and denied syscalls return
// EPERM; everything else is allowed.
//
// Every mode also answers seccompNoSys with ENOSYS and refuses setIDBits
// in the mode argument of seccompModeArgs with EPERM.
//
// Every mode, SeccompNone included (the base filter the helper installs
// when the plan selects no network filter), denies seccompAlwaysDenied
// and ioctl with request TIOCSTI or TIOCLINUX (compared as 32 bits, as
// the kernel reads it): a command must not type into a terminal it
// shares with the caller. Restricted adds seccompNetDenied and denies
// socket and socketpair unless the domain (32 bits) is AF_UNIX, and
// socket(AF_UNIX, SOCK_DGRAM or SOCK_RAW): an unbound datagram socket can
// sendmsg to any host socket by path. VMSocketRestricted denies socket and
// socketpair for AF_VSOCK. inheritPID adds the rules of a command in the
// server's PID namespace (seccompOtherProcessRules).
func seccompProgram(mode SeccompMode, trace, inheritPID bool, a seccompArch) ([]bpf.Instruction, error) {
	denied := seccompAlwaysDenied
	switch mode {
	case SeccompRestricted:
		denied = append(denied[:len(denied):len(denied)], seccompNetDenied...)
	case SeccompVMSocketRestricted, SeccompNone, SeccompProxied, SeccompProxiedUnix:
	default:
		return nil, fmt.Errorf("seccomp: unknown mode %q", mode)
	}
	if trace && mode != SeccompRestricted {
		denied = append(denied[:len(denied):len(denied)], seccompTraceDenied...)
	}
	b := &seccompBuilder{a: a, prog: []bpf.Instruction{
		bpf.LoadAbsolute{Off: seccompOffArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: a.audit, SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_KILL_PROCESS},
		bpf.LoadAbsolute{Off: seccompOffNr, Size: 4},
	}}
	if a.x32 {
		b.prog = append(b.prog, bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: 0x40000000, SkipFalse: 1}, retEPERM)
	}
	for _, name := range denied {
		b.ret(name, retEPERM)
	}
	for _, name := range seccompNoSys {
		b.ret(name, retENOSYS)
	}
	if trace {
		for _, name := range seccompTraced {
			b.ret(name, retTrace)
		}
	}
	for _, m := range seccompModeArgs {
		if _, ok := a.nr[m.name]; !ok && m.legacy {
			continue
		}
		// The mode is a 32-bit argument: its low half holds the bits.
		b.block(m.name,
			bpf.LoadAbsolute{Off: seccompOffArg0 + 8*m.arg, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: setIDBits, SkipFalse: 1},
			retEPERM, retAllow,
		)
	}
	b.block("ioctl",
		bpf.LoadAbsolute{Off: seccompOffArg1, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: tiocsti, SkipTrue: 2},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: tioclinux, SkipTrue: 1},
		retAllow, retEPERM,
	)
	b.socketRules(mode)
	if inheritPID {
		b.otherProcessRules()
	}
	if b.err != nil {
		return nil, b.err
	}
	return append(b.prog, retAllow), nil
}

// The returns of a filter: allow, fail the syscall with EPERM or ENOSYS,
// or stop for the tracer.
var (
	retAllow  = bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW}
	retEPERM  = bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)}
	retENOSYS = bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)}
	retTrace  = bpf.RetConstant{Val: unix.SECCOMP_RET_TRACE}
)

// seccompBuilder appends the rules of a filter program for one
// architecture, with A holding the syscall number at each rule. The first
// error (a syscall without a number for a) sticks, and the calls after it
// append nothing.
type seccompBuilder struct {
	a    seccompArch
	prog []bpf.Instruction
	err  error
}

// nr returns the number of syscall name, or records an error.
func (b *seccompBuilder) nr(name string) (uint32, bool) {
	if b.err != nil {
		return 0, false
	}
	n, ok := b.a.nr[name]
	if !ok {
		b.err = fmt.Errorf("seccomp: no syscall number for %s", name)
	}
	return n, ok
}

// ret makes syscall name return r at once.
func (b *seccompBuilder) ret(name string, r bpf.RetConstant) {
	if n, ok := b.nr(name); ok {
		b.prog = append(b.prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: n, SkipFalse: 1}, r)
	}
}

// block appends a block that skips itself for any syscall but name, and
// otherwise runs body, which must end in a return.
func (b *seccompBuilder) block(name string, body ...bpf.Instruction) {
	if n, ok := b.nr(name); ok {
		b.prog = append(b.prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: n, SkipFalse: uint8(len(body))})
		b.prog = append(b.prog, body...)
	}
}

// socketRules appends the socket and socketpair rules of mode: under
// Restricted only AF_UNIX, and no AF_UNIX datagram or raw socket; under
// VMSocketRestricted no AF_VSOCK; under Proxied only AF_INET and AF_INET6
// stream and datagram sockets (no raw socket, no SCTP, no netlink, packet
// or any other family) and AF_UNIX socketpairs, ProxiedUnix adding AF_UNIX
// sockets; none otherwise.
func (b *seccompBuilder) socketRules(mode SeccompMode) {
	switch mode {
	case SeccompRestricted:
		b.block("socket",
			bpf.LoadAbsolute{Off: seccompOffArg0, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: afUnix, SkipFalse: 5},
			bpf.LoadAbsolute{Off: seccompOffArg1, Size: 4},
			bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: sockTypeMask},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: sockDgram, SkipTrue: 2},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: sockRaw, SkipTrue: 1},
			retAllow, retEPERM,
		)
		b.block("socketpair",
			bpf.LoadAbsolute{Off: seccompOffArg0, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: afUnix, SkipFalse: 1},
			retAllow, retEPERM,
		)
	case SeccompProxied, SeccompProxiedUnix:
		// Unix sockets: allowed with ProxiedUnix, EPERM otherwise.
		unixRet := retEPERM
		if mode == SeccompProxiedUnix {
			unixRet = retAllow
		}
		b.block("socket",
			bpf.LoadAbsolute{Off: seccompOffArg0, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: afUnix, SkipFalse: 1},
			unixRet,
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: afInet, SkipTrue: 1},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: afInet6, SkipFalse: 5},
			bpf.LoadAbsolute{Off: seccompOffArg1, Size: 4},
			bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: sockTypeMask},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: sockStream, SkipTrue: 1},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: sockDgram, SkipFalse: 1},
			retAllow, retEPERM,
		)
		b.block("socketpair",
			bpf.LoadAbsolute{Off: seccompOffArg0, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: afUnix, SkipFalse: 1},
			retAllow, retEPERM,
		)
	case SeccompVMSocketRestricted:
		for _, name := range []string{"socket", "socketpair"} {
			b.block(name,
				bpf.LoadAbsolute{Off: seccompOffArg0, Size: 4},
				bpf.JumpIf{Cond: bpf.JumpEqual, Val: afVsock, SkipTrue: 1},
				retAllow, retEPERM,
			)
		}
	}
}

// seccompPIDArg0 are the calls that change another process's limits or
// scheduling, named by a PID in their first argument (0: the caller).
// setpriority and ioprio_set take a kind and an id (seccompWhoArgs).
var seccompPIDArg0 = []string{"prlimit64", "sched_setaffinity", "sched_setscheduler", "sched_setparam", "sched_setattr"}

// seccompWhoArgs are setpriority and ioprio_set with the value of their
// first argument that names one process (PRIO_PROCESS, IOPRIO_WHO_PROCESS).
var seccompWhoArgs = []struct {
	name    string
	process uint32
}{{"setpriority", 0}, {"ioprio_set", 1}}

// otherProcessRules keep a command in the server's PID namespace
// (Plan.InheritPIDNS) from changing any other process, the server and its
// watchdog included, by what the kernel allows between processes of one
// uid without a capability: lowering a resource limit (RLIMIT_CPU or
// RLIMIT_NOFILE kill or starve the server), its CPU affinity, scheduling
// policy, nice value or I/O priority. Each call may only name the caller
// (PID 0; for setpriority and ioprio_set, the one-process kind with id 0);
// anything else is EPERM. Signals are the Landlock signal scope's
// (scopeSignals); ptrace and the process_vm calls need a capability the
// command lacks, and Landlock refuses them outside its domain as well.
func (b *seccompBuilder) otherProcessRules() {
	for _, name := range seccompPIDArg0 {
		b.block(name,
			bpf.LoadAbsolute{Off: seccompOffArg0, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0, SkipFalse: 1},
			retAllow, retEPERM,
		)
	}
	for _, w := range seccompWhoArgs {
		b.block(w.name,
			bpf.LoadAbsolute{Off: seccompOffArg0, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: w.process, SkipFalse: 3},
			bpf.LoadAbsolute{Off: seccompOffArg1, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0, SkipFalse: 1},
			retAllow, retEPERM,
		)
	}
}

// installSeccomp installs the filter for mode on every thread of the
// helper (SECCOMP_FILTER_FLAG_TSYNC), so the command and the in-process fs
// helper inherit it. no_new_privs must already be set. SeccompNone (no
// network filter) still installs the base filter of seccompProgram: the
// keyring and terminal-injection rules hold in every sandbox. trace adds
// the exec tracing rules (seccompProgram), inheritPID the rules of a
// command in the server's PID namespace.
func installSeccomp(mode SeccompMode, trace, inheritPID bool) error {
	a, err := nativeSeccompArch()
	if err != nil {
		return err
	}
	prog, err := seccompProgram(mode, trace, inheritPID, a)
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
