//go:build linux && arm64

package sandbox

import "golang.org/x/sys/unix"

// nativeSeccompArch is aarch64.
func nativeSeccompArch() (seccompArch, error) {
	return seccompArch{audit: unix.AUDIT_ARCH_AARCH64, nr: seccompNumbers()}, nil
}
