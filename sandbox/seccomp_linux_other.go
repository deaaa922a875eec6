//go:build linux && !amd64 && !arm64

package sandbox

import (
	"fmt"
	"runtime"
)

// nativeSeccompArch fails: the filter is built for x86_64 and aarch64 only.
func nativeSeccompArch() (seccompArch, error) {
	return seccompArch{}, fmt.Errorf("seccomp: unsupported architecture %s", runtime.GOARCH)
}
