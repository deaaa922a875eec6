//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// bpfCgroupUnixSendmsg is BPF_CGROUP_UNIX_SENDMSG (Linux 6.7), missing
// from x/sys/unix: a cgroup sock_addr program run for every sendmsg with
// a destination address on an AF_UNIX socket.
const bpfCgroupUnixSendmsg = 50

// denyProgram is `r0 = 0; exit`: a sock_addr program returning 0 refuses
// the call with EPERM.
var denyProgram = [2]struct {
	code uint8
	regs uint8
	off  int16
	imm  int32
}{
	{code: unix.BPF_ALU64 | unix.BPF_MOV | unix.BPF_K},
	{code: unix.BPF_JMP | unix.BPF_EXIT},
}

var bpfLicense = []byte("Dual MIT/GPL\x00")

// unixSendmsgProg is the loaded program's fd, loaded once per process and
// kept open for its life (close-on-exec).
var unixSendmsgProg = sync.OnceValues(func() (int, error) {
	var attr [128]byte // union bpf_attr, BPF_PROG_LOAD layout
	*(*uint32)(unsafe.Pointer(&attr[0])) = unix.BPF_PROG_TYPE_CGROUP_SOCK_ADDR
	*(*uint32)(unsafe.Pointer(&attr[4])) = uint32(len(denyProgram))
	*(*uint64)(unsafe.Pointer(&attr[8])) = uint64(uintptr(unsafe.Pointer(&denyProgram[0])))
	*(*uint64)(unsafe.Pointer(&attr[16])) = uint64(uintptr(unsafe.Pointer(&bpfLicense[0])))
	copy(attr[48:64], "codex_unix_send")
	*(*uint32)(unsafe.Pointer(&attr[68])) = bpfCgroupUnixSendmsg
	fd, _, e := unix.Syscall(unix.SYS_BPF, unix.BPF_PROG_LOAD, uintptr(unsafe.Pointer(&attr[0])), unsafe.Sizeof(attr))
	runtime.KeepAlive(&denyProgram)
	runtime.KeepAlive(bpfLicense)
	if e != 0 {
		return -1, os.NewSyscallError("bpf(BPF_PROG_LOAD)", e)
	}
	return int(fd), nil
})

// DenyNamedUnixSends attaches to the cgroup open as cgroupFD a program
// that refuses, with EPERM, every sendmsg that names an AF_UNIX
// destination (BPF_CGROUP_UNIX_SENDMSG), for every process in that cgroup
// and below. It closes the last way out of a network-off sandbox that
// seccomp cannot see: sendmsg with msg_name on one end of an AF_UNIX
// SOCK_DGRAM socketpair reaches any host datagram socket by path (the
// filter cannot read msg_name, and a socketpair must keep working).
// Sends on a connected pair name no destination and are not affected.
//
// The caller must own the cgroup (a leaf holding only the sandboxed
// process). It needs Linux 6.7 and CAP_BPF with CAP_NET_ADMIN (root); the
// error says what is missing. The program goes away with the cgroup.
func DenyNamedUnixSends(cgroupFD int) error {
	prog, err := unixSendmsgProg()
	if err != nil {
		return fmt.Errorf("loading the unix sendmsg filter: %w", err)
	}
	var attr [32]byte // union bpf_attr, BPF_PROG_ATTACH layout
	*(*uint32)(unsafe.Pointer(&attr[0])) = uint32(cgroupFD)
	*(*uint32)(unsafe.Pointer(&attr[4])) = uint32(prog)
	*(*uint32)(unsafe.Pointer(&attr[8])) = bpfCgroupUnixSendmsg
	*(*uint32)(unsafe.Pointer(&attr[12])) = unix.BPF_F_ALLOW_MULTI
	_, _, e := unix.Syscall(unix.SYS_BPF, unix.BPF_PROG_ATTACH, uintptr(unsafe.Pointer(&attr[0])), unsafe.Sizeof(attr))
	if e != 0 {
		return fmt.Errorf("attaching the unix sendmsg filter: %w", os.NewSyscallError("bpf(BPF_PROG_ATTACH)", e))
	}
	return nil
}
