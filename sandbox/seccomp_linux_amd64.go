//go:build linux && amd64

package sandbox

import "golang.org/x/sys/unix"

// nativeSeccompArch is x86_64 (x32 numbers are rejected).
func nativeSeccompArch() (seccompArch, error) {
	return seccompArch{audit: unix.AUDIT_ARCH_X86_64, x32: true, nr: seccompNumbers()}, nil
}
