//go:build unix

package fsat

import (
	"os"
	"syscall"
)

// Lstat returns the identity of path itself (a final symlink is not
// followed).
func Lstat(path string) (ID, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return ID{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ID{}, os.ErrInvalid
	}
	return ID{Dev: uint64(st.Dev), Ino: uint64(st.Ino)}, nil
}
