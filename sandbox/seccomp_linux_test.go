//go:build linux && (amd64 || arm64)

package sandbox

import (
	"encoding/binary"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// runFilter evaluates a seccomp program on a synthetic seccomp_data with
// x/net/bpf's VM. The VM loads big-endian (it is made for packets), so the
// fields are written big-endian to read back as the kernel would natively.
func runFilter(t *testing.T, prog []bpf.Instruction, arch, nr, arg0, arg1 uint32) uint32 {
	t.Helper()
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatalf("NewVM: %v", err)
	}
	data := make([]byte, 64)
	binary.BigEndian.PutUint32(data[seccompOffNr:], nr)
	binary.BigEndian.PutUint32(data[seccompOffArch:], arch)
	binary.BigEndian.PutUint32(data[seccompOffArg0:], arg0)
	binary.BigEndian.PutUint32(data[seccompOffArg1:], arg1)
	ret, err := vm.Run(data)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return uint32(ret)
}

func TestSeccompProgram(t *testing.T) {
	a, err := nativeSeccompArch()
	if err != nil {
		t.Fatal(err)
	}
	const (
		allow = unix.SECCOMP_RET_ALLOW
		eperm = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
		kill  = unix.SECCOMP_RET_KILL_PROCESS
	)
	nr := a.nr
	type want struct{ restricted, vm, none uint32 }
	cases := []struct {
		name           string
		arch           uint32
		nr, arg0, arg1 uint32
		want           want
	}{
		{"read", a.audit, unix.SYS_READ, 0, 0, want{allow, allow, allow}},
		{"write", a.audit, unix.SYS_WRITE, 0, 0, want{allow, allow, allow}},
		{"recvfrom", a.audit, unix.SYS_RECVFROM, 0, 0, want{allow, allow, allow}},
		{"sendmsg", a.audit, unix.SYS_SENDMSG, 0, 0, want{allow, allow, allow}},
		{"recvmsg", a.audit, unix.SYS_RECVMSG, 0, 0, want{allow, allow, allow}},
		{"io_uring_setup", a.audit, nr["io_uring_setup"], 0, 0, want{eperm, eperm, eperm}},
		{"io_uring_enter", a.audit, nr["io_uring_enter"], 0, 0, want{eperm, eperm, eperm}},
		{"io_uring_register", a.audit, nr["io_uring_register"], 0, 0, want{eperm, eperm, eperm}},
		{"add_key", a.audit, unix.SYS_ADD_KEY, 0, 0, want{eperm, eperm, eperm}},
		{"keyctl", a.audit, unix.SYS_KEYCTL, unix.KEYCTL_READ, 0, want{eperm, eperm, eperm}},
		{"request_key", a.audit, unix.SYS_REQUEST_KEY, 0, 0, want{eperm, eperm, eperm}},
		{"pidfd_getfd", a.audit, unix.SYS_PIDFD_GETFD, 3, 0, want{eperm, eperm, eperm}},
		{"kcmp", a.audit, unix.SYS_KCMP, 1, 1, want{eperm, eperm, eperm}},
		{"ioctl TIOCSTI", a.audit, unix.SYS_IOCTL, 0, unix.TIOCSTI, want{eperm, eperm, eperm}},
		{"ioctl TIOCLINUX", a.audit, unix.SYS_IOCTL, 0, unix.TIOCLINUX, want{eperm, eperm, eperm}},
		{"ioctl TIOCGWINSZ", a.audit, unix.SYS_IOCTL, 0, unix.TIOCGWINSZ, want{allow, allow, allow}},
		{"ioctl FIONREAD (TIOCINQ)", a.audit, unix.SYS_IOCTL, 0, unix.TIOCINQ, want{allow, allow, allow}},
		{"connect", a.audit, nr["connect"], unix.AF_UNIX, 0, want{eperm, allow, allow}},
		{"bind", a.audit, nr["bind"], 0, 0, want{eperm, allow, allow}},
		{"sendto", a.audit, nr["sendto"], 0, 0, want{eperm, allow, allow}},
		{"ptrace", a.audit, nr["ptrace"], 0, 0, want{eperm, allow, allow}},
		{"socket unix stream", a.audit, nr["socket"], unix.AF_UNIX, unix.SOCK_STREAM, want{allow, allow, allow}},
		{"socket unix seqpacket", a.audit, nr["socket"], unix.AF_UNIX, unix.SOCK_SEQPACKET | unix.SOCK_CLOEXEC, want{allow, allow, allow}},
		{"socket unix dgram", a.audit, nr["socket"], unix.AF_UNIX, unix.SOCK_DGRAM, want{eperm, allow, allow}},
		{"socket unix dgram cloexec nonblock", a.audit, nr["socket"], unix.AF_UNIX, unix.SOCK_DGRAM | unix.SOCK_CLOEXEC | unix.SOCK_NONBLOCK, want{eperm, allow, allow}},
		{"socket unix raw (a datagram socket)", a.audit, nr["socket"], unix.AF_UNIX, unix.SOCK_RAW, want{eperm, allow, allow}},
		{"socket inet", a.audit, nr["socket"], unix.AF_INET, unix.SOCK_STREAM, want{eperm, allow, allow}},
		{"socket inet6", a.audit, nr["socket"], unix.AF_INET6, unix.SOCK_DGRAM, want{eperm, allow, allow}},
		{"socket netlink", a.audit, nr["socket"], unix.AF_NETLINK, unix.SOCK_RAW, want{eperm, allow, allow}},
		{"socket vsock", a.audit, nr["socket"], unix.AF_VSOCK, unix.SOCK_STREAM, want{eperm, eperm, allow}},
		{"socketpair unix dgram", a.audit, nr["socketpair"], unix.AF_UNIX, unix.SOCK_DGRAM, want{allow, allow, allow}},
		{"socketpair unix stream", a.audit, nr["socketpair"], unix.AF_UNIX, unix.SOCK_STREAM, want{allow, allow, allow}},
		{"socketpair inet", a.audit, nr["socketpair"], unix.AF_INET, 0, want{eperm, allow, allow}},
		{"socketpair vsock", a.audit, nr["socketpair"], unix.AF_VSOCK, 0, want{eperm, eperm, allow}},
		{"foreign arch", unix.AUDIT_ARCH_I386, unix.SYS_READ, 0, 0, want{kill, kill, kill}},
	}
	if a.x32 {
		cases = append(cases, struct {
			name           string
			arch           uint32
			nr, arg0, arg1 uint32
			want           want
		}{"x32 read", a.audit, 0x40000000 | unix.SYS_READ, 0, 0, want{eperm, eperm, eperm}})
	}
	for _, mode := range []SeccompMode{SeccompRestricted, SeccompVMSocketRestricted, SeccompNone} {
		prog, err := seccompProgram(mode, false, false, a)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := bpf.Assemble(prog); err != nil {
			t.Fatalf("%s: assemble: %v", mode, err)
		}
		for _, c := range cases {
			w := c.want.restricted
			switch mode {
			case SeccompVMSocketRestricted:
				w = c.want.vm
			case SeccompNone:
				w = c.want.none
			}
			// Arguments are compared as 32 bits: the VM sees only the
			// low words at offsets 16 and 24, as the kernel's
			// little-endian loads do.
			if got := runFilter(t, prog, c.arch, c.nr, c.arg0, c.arg1); got != w {
				t.Errorf("%q/%s: got %#x, want %#x", mode, c.name, got, w)
			}
		}
	}
	if _, err := seccompProgram("bogus", false, false, a); err == nil {
		t.Error("unknown mode accepted")
	}
}

// TestSeccompSetIDAndNoSys: in every mode, a set-user-ID or set-group-ID
// bit in the mode of any call that sets one is refused, other modes pass,
// and clone3 and openat2 answer ENOSYS.
func TestSeccompSetIDAndNoSys(t *testing.T) {
	a, err := nativeSeccompArch()
	if err != nil {
		t.Fatal(err)
	}
	const (
		allow  = unix.SECCOMP_RET_ALLOW
		eperm  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
		enosys = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
	)
	run := func(prog []bpf.Instruction, nr uint32, args [6]uint32) uint32 {
		vm, err := bpf.NewVM(prog)
		if err != nil {
			t.Fatal(err)
		}
		data := make([]byte, 64)
		binary.BigEndian.PutUint32(data[seccompOffNr:], nr)
		binary.BigEndian.PutUint32(data[seccompOffArch:], a.audit)
		for i, v := range args {
			binary.BigEndian.PutUint32(data[seccompOffArg0+8*i:], v)
		}
		ret, err := vm.Run(data)
		if err != nil {
			t.Fatal(err)
		}
		return uint32(ret)
	}
	for _, mode := range []SeccompMode{SeccompRestricted, SeccompVMSocketRestricted, SeccompNone} {
		prog, err := seccompProgram(mode, false, false, a)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range seccompModeArgs {
			n, ok := a.nr[m.name]
			if !ok {
				if !m.legacy {
					t.Fatalf("no number for %s", m.name)
				}
				continue
			}
			for mode2, want := range map[uint32]uint32{
				0o755: allow, 0o1777: allow, 0o4755: eperm, 0o2755: eperm, 0o6755: eperm,
				unix.S_IFREG | 0o4755: eperm, unix.S_IFREG | 0o644: allow,
			} {
				var args [6]uint32
				args[m.arg] = mode2
				if got := run(prog, n, args); got != want {
					t.Errorf("%s/%s mode %#o: got %#x, want %#x", mode, m.name, mode2, got, want)
				}
			}
		}
		for _, name := range []string{"clone3", "openat2"} {
			if got := run(prog, a.nr[name], [6]uint32{}); got != enosys {
				t.Errorf("%s/%s: got %#x, want ENOSYS", mode, name, got)
			}
		}
	}
}

// TestSeccompTraceExec is the attack test of Plan.TraceExecFD's filter: in
// every mode, execve and execveat go to the tracer (ENOSYS without one,
// never a silent allow), and ptrace, process_vm_readv and
// process_vm_writev are denied, so a traced command can neither detach
// nor trace nor rewrite the memory of another process of its call. Without
// tracing, exec is allowed as before.
func TestSeccompTraceExec(t *testing.T) {
	a, err := nativeSeccompArch()
	if err != nil {
		t.Fatal(err)
	}
	const (
		allow = unix.SECCOMP_RET_ALLOW
		eperm = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
		trace = unix.SECCOMP_RET_TRACE
	)
	nr := a.nr
	for _, mode := range []SeccompMode{SeccompRestricted, SeccompVMSocketRestricted, SeccompNone} {
		traced, err := seccompProgram(mode, true, false, a)
		if err != nil {
			t.Fatal(err)
		}
		plain, err := seccompProgram(mode, false, false, a)
		if err != nil {
			t.Fatal(err)
		}
		netOnly := uint32(allow) // what the untraced filter does with ptrace
		if mode == SeccompRestricted {
			netOnly = eperm
		}
		for _, c := range []struct {
			name         string
			nr           uint32
			traced, none uint32
		}{
			{"execve", nr["execve"], trace, allow},
			{"execveat", nr["execveat"], trace, allow},
			{"ptrace", nr["ptrace"], eperm, netOnly},
			{"process_vm_readv", nr["process_vm_readv"], eperm, netOnly},
			{"process_vm_writev", nr["process_vm_writev"], eperm, netOnly},
			{"read", unix.SYS_READ, allow, allow},
			{"pidfd_getfd", nr["pidfd_getfd"], eperm, eperm},
		} {
			if got := runFilter(t, traced, a.audit, c.nr, 0, 0); got != c.traced {
				t.Errorf("%q traced/%s: got %#x, want %#x", mode, c.name, got, c.traced)
			}
			if got := runFilter(t, plain, a.audit, c.nr, 0, 0); got != c.none {
				t.Errorf("%q untraced/%s: got %#x, want %#x", mode, c.name, got, c.none)
			}
		}
		if got := runFilter(t, traced, unix.AUDIT_ARCH_I386, nr["execve"], 0, 0); got != unix.SECCOMP_RET_KILL_PROCESS {
			t.Errorf("%q traced: foreign-arch execve got %#x, want kill", mode, got)
		}
	}
}

// TestSeccompInheritPIDRules: with inheritPID, in every mode, the calls
// that change another process's limits or scheduling may name only the
// caller (PID 0; for setpriority and ioprio_set the one-process kind with
// id 0); without it they are allowed, as the PID namespace hides every
// other process.
func TestSeccompInheritPIDRules(t *testing.T) {
	a, err := nativeSeccompArch()
	if err != nil {
		t.Fatal(err)
	}
	const (
		allow = unix.SECCOMP_RET_ALLOW
		eperm = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	)
	cases := []struct {
		name       string
		nr         uint32
		arg0, arg1 uint32
		want       uint32
	}{
		{"prlimit64 self", unix.SYS_PRLIMIT64, 0, unix.RLIMIT_NOFILE, allow},
		{"prlimit64 other", unix.SYS_PRLIMIT64, 4242, unix.RLIMIT_CPU, eperm},
		{"sched_setaffinity self", unix.SYS_SCHED_SETAFFINITY, 0, 8, allow},
		{"sched_setaffinity other", unix.SYS_SCHED_SETAFFINITY, 4242, 8, eperm},
		{"sched_setscheduler other", unix.SYS_SCHED_SETSCHEDULER, 4242, 5, eperm},
		{"sched_setparam other", unix.SYS_SCHED_SETPARAM, 4242, 0, eperm},
		{"sched_setattr other", unix.SYS_SCHED_SETATTR, 4242, 0, eperm},
		{"setpriority self", unix.SYS_SETPRIORITY, unix.PRIO_PROCESS, 0, allow},
		{"setpriority other", unix.SYS_SETPRIORITY, unix.PRIO_PROCESS, 4242, eperm},
		{"setpriority own user", unix.SYS_SETPRIORITY, unix.PRIO_USER, 0, eperm},
		{"setpriority own group", unix.SYS_SETPRIORITY, unix.PRIO_PGRP, 0, eperm},
		{"ioprio_set self", unix.SYS_IOPRIO_SET, 1, 0, allow},
		{"ioprio_set other", unix.SYS_IOPRIO_SET, 1, 4242, eperm},
		{"ioprio_set own user", unix.SYS_IOPRIO_SET, 3, 0, eperm},
		{"getpid", unix.SYS_GETPID, 4242, 4242, allow},
	}
	for _, mode := range []SeccompMode{SeccompRestricted, SeccompVMSocketRestricted, SeccompNone} {
		for _, inherit := range []bool{false, true} {
			prog, err := seccompProgram(mode, false, inherit, a)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range cases {
				want := c.want
				if !inherit {
					want = allow
				}
				if got := runFilter(t, prog, a.audit, c.nr, c.arg0, c.arg1); got != want {
					t.Errorf("%q inherit %v/%s: got %#x, want %#x", mode, inherit, c.name, got, want)
				}
			}
		}
	}
}
