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
func runFilter(t *testing.T, prog []bpf.Instruction, arch, nr, arg0 uint32) uint32 {
	t.Helper()
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatalf("NewVM: %v", err)
	}
	data := make([]byte, 64)
	binary.BigEndian.PutUint32(data[seccompOffNr:], nr)
	binary.BigEndian.PutUint32(data[seccompOffArch:], arch)
	binary.BigEndian.PutUint32(data[seccompOffArg0:], arg0)
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
	cases := []struct {
		name       string
		mode       SeccompMode
		arch       uint32
		nr, arg0   uint32
		restricted uint32 // want under SeccompRestricted
		vm         uint32 // want under SeccompVMSocketRestricted
	}{
		{"read", "", a.audit, unix.SYS_READ, 0, allow, allow},
		{"write", "", a.audit, unix.SYS_WRITE, 0, allow, allow},
		{"recvfrom", "", a.audit, unix.SYS_RECVFROM, 0, allow, allow},
		{"sendmsg", "", a.audit, unix.SYS_SENDMSG, 0, allow, allow},
		{"recvmsg", "", a.audit, unix.SYS_RECVMSG, 0, allow, allow},
		{"io_uring_setup", "", a.audit, nr["io_uring_setup"], 0, eperm, eperm},
		{"io_uring_enter", "", a.audit, nr["io_uring_enter"], 0, eperm, eperm},
		{"io_uring_register", "", a.audit, nr["io_uring_register"], 0, eperm, eperm},
		{"connect", "", a.audit, nr["connect"], unix.AF_UNIX, eperm, allow},
		{"bind", "", a.audit, nr["bind"], 0, eperm, allow},
		{"sendto", "", a.audit, nr["sendto"], 0, eperm, allow},
		{"ptrace", "", a.audit, nr["ptrace"], 0, eperm, allow},
		{"socket unix", "", a.audit, nr["socket"], unix.AF_UNIX, allow, allow},
		{"socket inet", "", a.audit, nr["socket"], unix.AF_INET, eperm, allow},
		{"socket inet6", "", a.audit, nr["socket"], unix.AF_INET6, eperm, allow},
		{"socket netlink", "", a.audit, nr["socket"], unix.AF_NETLINK, eperm, allow},
		{"socket vsock", "", a.audit, nr["socket"], unix.AF_VSOCK, eperm, eperm},
		{"socketpair unix", "", a.audit, nr["socketpair"], unix.AF_UNIX, allow, allow},
		{"socketpair inet", "", a.audit, nr["socketpair"], unix.AF_INET, eperm, allow},
		{"socketpair vsock", "", a.audit, nr["socketpair"], unix.AF_VSOCK, eperm, eperm},
		{"foreign arch", "", unix.AUDIT_ARCH_I386, unix.SYS_READ, 0, kill, kill},
	}
	if a.x32 {
		cases = append(cases, struct {
			name       string
			mode       SeccompMode
			arch       uint32
			nr, arg0   uint32
			restricted uint32
			vm         uint32
		}{"x32 read", "", a.audit, 0x40000000 | unix.SYS_READ, 0, eperm, eperm})
	}
	for _, mode := range []SeccompMode{SeccompRestricted, SeccompVMSocketRestricted} {
		prog, err := seccompProgram(mode, a)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := bpf.Assemble(prog); err != nil {
			t.Fatalf("%s: assemble: %v", mode, err)
		}
		for _, c := range cases {
			want := c.restricted
			if mode == SeccompVMSocketRestricted {
				want = c.vm
			}
			// The domain is compared as 32 bits: high bits set in the
			// 64-bit register must not matter, and the VM sees only the
			// low word at offset 16.
			if got := runFilter(t, prog, c.arch, c.nr, c.arg0); got != want {
				t.Errorf("%s/%s: got %#x, want %#x", mode, c.name, got, want)
			}
		}
	}
	if _, err := seccompProgram("bogus", a); err == nil {
		t.Error("unknown mode accepted")
	}
}

func TestSeccompNone(t *testing.T) {
	if err := installSeccomp(SeccompNone); err != nil {
		t.Fatalf("SeccompNone installs something: %v", err)
	}
}
