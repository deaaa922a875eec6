//go:build linux

package fsat

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrMismatch is returned by OpenVerified when the file found is not the
// one expected.
var ErrMismatch = errors.New("not the file the plan was made for")

// Open opens path with openat2 and RESOLVE_NO_SYMLINKS (a symlink anywhere
// on the way, the last component included, gives ELOOP), close-on-exec. A
// path relative to a dirfd other than AT_FDCWD is resolved with
// RESOLVE_BENEATH as well. Do not pass O_NOFOLLOW with O_PATH: that pair
// opens a final symlink itself.
//
// Inside a sandbox whose filter hides openat2 (ENOSYS), one name below a
// dirfd is still opened, with openat and O_NOFOLLOW (a symlink gives ELOOP,
// with O_PATH too): for one component that is what the resolve flags
// promise. Anything else fails with ENOSYS.
func Open(dirfd int, path string, flags int) (int, error) {
	how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	if dirfd != unix.AT_FDCWD {
		how.Resolve |= unix.RESOLVE_BENEATH
	}
	for {
		fd, err := unix.Openat2(dirfd, path, &how)
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		if err == unix.ENOSYS && dirfd != unix.AT_FDCWD && oneName(path) {
			return openName(dirfd, path, flags)
		}
		return fd, err
	}
}

// oneName reports whether path is a single name: no slash, not . or ..
func oneName(path string) bool {
	return path != "" && path != "." && path != ".." && !strings.Contains(path, "/")
}

// openName opens the single name below dirfd without following a symlink.
func openName(dirfd int, name string, flags int) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return -1, err
		}
		if flags&unix.O_PATH != 0 {
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT == unix.S_IFLNK {
				unix.Close(fd)
				if err == nil {
					err = unix.ELOOP
				}
				return -1, err
			}
		}
		return fd, nil
	}
}

// OpenPath is Open with O_PATH: a handle that pins a file for *at calls,
// fstat and mounts without opening it for I/O.
func OpenPath(dirfd int, path string) (int, error) {
	return Open(dirfd, path, unix.O_PATH)
}

// Stat returns the identity of the open file fd.
func Stat(fd int) (ID, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return ID{}, err
	}
	return ID{Dev: st.Dev, Ino: st.Ino}, nil
}

// StatAt returns the identity of name below dirfd, not following a
// symlink, and whether it is a directory.
func StatAt(dirfd int, name string) (ID, bool, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return ID{}, false, err
	}
	return ID{Dev: st.Dev, Ino: st.Ino}, st.Mode&unix.S_IFMT == unix.S_IFDIR, nil
}

// OpenVerified opens path like OpenPath and checks that it is the file
// want; a mismatch closes the handle and returns an error wrapping
// ErrMismatch. A zero want is refused: callers must know what they open.
func OpenVerified(dirfd int, path string, want ID) (int, error) {
	if want.IsZero() {
		return -1, fmt.Errorf("%s: no identity recorded: %w", path, ErrMismatch)
	}
	fd, err := OpenPath(dirfd, path)
	if err != nil {
		return -1, err
	}
	got, err := Stat(fd)
	if err != nil {
		unix.Close(fd)
		return -1, err
	}
	if got != want {
		unix.Close(fd)
		return -1, fmt.Errorf("%s is %d:%d, the plan expects %d:%d: %w", path, got.Dev, got.Ino, want.Dev, want.Ino, ErrMismatch)
	}
	return fd, nil
}

// maxRemoveDepth bounds the recursion of RemoveAllAt.
const maxRemoveDepth = 256

// maxRemoveRounds bounds how often a directory is re-listed while
// something keeps creating entries in it.
const maxRemoveRounds = 16

// RemoveAllAt removes name below the directory handle dirfd and everything
// inside it, like os.RemoveAll, but never by path: a symlink is removed
// itself, never followed; directories are opened below their parent's
// handle with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_XDEV, so a
// rename or a symlink planted during the removal cannot lead it outside
// the tree, and it does not descend into mount points. A missing name is
// not an error.
func RemoveAllAt(dirfd int, name string) error {
	return removeAt(dirfd, name, 0)
}

func removeAt(dirfd int, name string, depth int) error {
	err := unix.Unlinkat(dirfd, name, 0)
	if err == nil || err == unix.ENOENT {
		return nil
	}
	if err != unix.EISDIR {
		return os.NewSyscallError("unlinkat "+name, err)
	}
	if depth >= maxRemoveDepth {
		return fmt.Errorf("removing %s: tree too deep", name)
	}
	how := unix.OpenHow{
		Flags:   uint64(unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_XDEV | unix.RESOLVE_NO_MAGICLINKS,
	}
	for round := 0; ; round++ {
		fd, err := unix.Openat2(dirfd, name, &how)
		if err == unix.ENOSYS {
			// Inside a sandbox whose filter hides openat2: name is one
			// component, so O_NOFOLLOW alone keeps the open beneath
			// dirfd; the device check stands in for RESOLVE_NO_XDEV.
			fd, err = openChildDir(dirfd, name)
		}
		if err == unix.ENOENT {
			return nil
		}
		if err != nil {
			return os.NewSyscallError("openat2 "+name, err)
		}
		f := os.NewFile(uintptr(fd), name)
		names, rerr := f.Readdirnames(-1)
		var first error
		for _, n := range names {
			if err := removeAt(fd, n, depth+1); err != nil && first == nil {
				first = err
			}
		}
		f.Close()
		if rerr != nil {
			return rerr
		}
		if first != nil {
			return first
		}
		err = unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
		if err == nil || err == unix.ENOENT {
			return nil
		}
		if err != unix.ENOTEMPTY || round >= maxRemoveRounds {
			return os.NewSyscallError("unlinkat "+name, err)
		}
	}
}

// openChildDir opens the directory name (one component) below dirfd for
// reading, without following a symlink, and refuses another filesystem.
func openChildDir(dirfd int, name string) (int, error) {
	if name == "" || name == "." || name == ".." || strings.Contains(name, "/") {
		return -1, unix.EINVAL
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	var parent, child unix.Stat_t
	if err := unix.Fstat(dirfd, &parent); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if err := unix.Fstat(fd, &child); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if parent.Dev != child.Dev {
		unix.Close(fd)
		return -1, unix.EXDEV
	}
	return fd, nil
}
