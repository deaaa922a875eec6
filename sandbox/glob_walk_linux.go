//go:build linux

package sandbox

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// openScanRoot opens a glob's search root, a canonical folder, refusing a
// symlink in any component (ELOOP): one planted since resolution must not
// lead the walk elsewhere. Kernels without openat2 open it by path.
func openScanRoot(path string) (*os.File, error) {
	fd, err := openNoSymlinks(path, unix.O_RDONLY|unix.O_DIRECTORY)
	if errors.Is(err, unix.ENOSYS) {
		return os.Open(path)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}
