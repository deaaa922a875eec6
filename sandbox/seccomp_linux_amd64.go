//go:build linux && amd64

package sandbox

import "golang.org/x/sys/unix"

// nativeSeccompArch is x86_64 (x32 numbers are rejected).
func nativeSeccompArch() (seccompArch, error) {
	nr := seccompNumbers()
	// The calls that aarch64 never had.
	nr["chmod"], nr["creat"], nr["open"], nr["mknod"] = unix.SYS_CHMOD, unix.SYS_CREAT, unix.SYS_OPEN, unix.SYS_MKNOD
	return seccompArch{audit: unix.AUDIT_ARCH_X86_64, x32: true, nr: nr}, nil
}
