package fshelper

import "golang.org/x/sys/unix"

// WalkDirNoFollow runs the component-walk fallback of openDirNoFollow, which
// kernels with openat2 never reach, and closes the descriptor it opens.
func WalkDirNoFollow(dir string) error {
	fd, err := walkDirNoFollow(dir)
	if err == nil {
		_ = unix.Close(fd)
	}
	return err
}
