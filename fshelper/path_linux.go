//go:build linux

package fshelper

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// target is a path ready for the *at system calls. When following symbolic
// links it is simply (AT_FDCWD, path). Otherwise dirfd is an O_PATH descriptor
// of the parent directory, opened without following any link, and name is the
// last component, which the methods below never follow either.
type target struct {
	dirfd    int
	name     string
	path     string // the native path, for error values
	noFollow bool
}

// resolve prepares path for an operation. With noFollow, a symbolic link in a
// parent component gives ErrSymlink. The caller must call close.
func resolve(path string, noFollow bool) (*target, error) {
	if !noFollow {
		return &target{dirfd: unix.AT_FDCWD, name: path, path: path}, nil
	}
	dir, name := filepath.Dir(path), filepath.Base(path)
	if path == "/" {
		name = "."
	}
	fd, err := openDirNoFollow(dir)
	if err != nil {
		return nil, pathError("open", dir, err)
	}
	return &target{dirfd: fd, name: name, path: path, noFollow: true}, nil
}

// close releases the parent descriptor, if any. It accepts a nil target.
func (t *target) close() {
	if t != nil && t.dirfd >= 0 {
		_ = unix.Close(t.dirfd)
	}
}

// noFollowFlags returns extra, the O_* flags for open, plus O_NOFOLLOW when
// the last component must not be followed.
func (t *target) noFollowFlags(extra int) int {
	if t.noFollow {
		return extra | unix.O_NOFOLLOW
	}
	return extra
}

// wrap turns a failed system call on the target into an error value. ELOOP
// from a no-follow call means the last component is a link: ErrSymlink.
func (t *target) wrap(op string, err error) error {
	if t.noFollow && errors.Is(err, unix.ELOOP) {
		return ErrSymlink
	}
	return pathError(op, t.path, err)
}

// open opens the target with flags (O_NOFOLLOW added in no-follow mode).
func (t *target) open(flags int, perm uint32) (int, error) {
	fd, err := retryEINTR(func() (int, error) {
		return unix.Openat(t.dirfd, t.name, t.noFollowFlags(flags|unix.O_CLOEXEC), perm)
	})
	if err != nil {
		return -1, t.wrap("open", err)
	}
	return fd, nil
}

// stat describes what the path designates: the link's target when following,
// the last component itself otherwise, where a link gives ErrSymlink.
func (t *target) stat() (fileStat, error) {
	if !t.noFollow {
		return t.statFlags(0)
	}
	st, err := t.lstat()
	if err == nil && st.isSymlink() {
		return fileStat{}, ErrSymlink
	}
	return st, err
}

// lstat describes the last component itself, never following it.
func (t *target) lstat() (fileStat, error) { return t.statFlags(unix.AT_SYMLINK_NOFOLLOW) }

func (t *target) statFlags(flags int) (fileStat, error) {
	st, err := statAt(t.dirfd, t.name, flags)
	if err != nil {
		return fileStat{}, pathError("stat", t.path, err)
	}
	return st, nil
}

// fileStat is the part of a stat result the operations use.
type fileStat struct {
	mode     uint32 // S_IFMT and permission bits
	size     uint64
	dev, ino uint64
	nlink    uint64
	uid, gid uint32
	created  time.Time // zero when unknown
	modified time.Time
}

func (s fileStat) isDir() bool     { return s.mode&unix.S_IFMT == unix.S_IFDIR }
func (s fileStat) isRegular() bool { return s.mode&unix.S_IFMT == unix.S_IFREG }
func (s fileStat) isSymlink() bool { return s.mode&unix.S_IFMT == unix.S_IFLNK }

// statAt stats name relative to dirfd with statx, which also reports the
// birth time, and falls back to fstatat where statx is missing or filtered.
func statAt(dirfd int, name string, flags int) (fileStat, error) {
	var sx unix.Statx_t
	mask := unix.STATX_BASIC_STATS | unix.STATX_BTIME
	err := unix.Statx(dirfd, name, flags|unix.AT_STATX_SYNC_AS_STAT, mask, &sx)
	if err == nil {
		st := fileStat{
			mode:     uint32(sx.Mode),
			size:     sx.Size,
			dev:      unix.Mkdev(sx.Dev_major, sx.Dev_minor),
			ino:      sx.Ino,
			nlink:    uint64(sx.Nlink),
			uid:      sx.Uid,
			gid:      sx.Gid,
			modified: time.Unix(sx.Mtime.Sec, int64(sx.Mtime.Nsec)),
		}
		if sx.Mask&unix.STATX_BTIME != 0 {
			st.created = time.Unix(sx.Btime.Sec, int64(sx.Btime.Nsec))
		}
		return st, nil
	}
	if !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EPERM) {
		return fileStat{}, err
	}
	var s unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &s, flags); err != nil {
		return fileStat{}, err
	}
	return fileStat{
		mode:     s.Mode,
		size:     uint64(s.Size),
		dev:      s.Dev,
		ino:      s.Ino,
		nlink:    uint64(s.Nlink),
		uid:      s.Uid,
		gid:      s.Gid,
		modified: time.Unix(s.Mtim.Unix()),
	}, nil
}

// fstat describes an open descriptor.
func fstat(fd int) (fileStat, error) {
	var s unix.Stat_t
	if err := unix.Fstat(fd, &s); err != nil {
		return fileStat{}, err
	}
	return fileStat{mode: s.Mode, size: uint64(s.Size), dev: s.Dev, ino: s.Ino, nlink: uint64(s.Nlink), uid: s.Uid, gid: s.Gid}, nil
}

// openDirNoFollow opens dir as an O_PATH directory descriptor, refusing a
// symbolic link in any of its components with ErrSymlink. It uses openat2 with
// RESOLVE_NO_SYMLINKS (Linux 5.6) and falls back to a component walk.
func openDirNoFollow(dir string) (int, error) {
	how := unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS,
	}
	for range 8 {
		fd, err := unix.Openat2(unix.AT_FDCWD, dir, &how)
		switch {
		case err == nil:
			return fd, nil
		case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EINTR):
			continue // a concurrent rename raced the lookup; try again
		case errors.Is(err, unix.ELOOP):
			return -1, ErrSymlink
		case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EPERM):
			return walkDirNoFollow(dir) // old kernel, or openat2 filtered by seccomp
		default:
			return -1, err
		}
	}
	return walkDirNoFollow(dir)
}

// walkDirNoFollow opens dir one component at a time from the root. Each
// component is opened with O_PATH|O_NOFOLLOW, which yields the link itself
// when the component is a symbolic link, and is checked with fstat.
func walkDirNoFollow(dir string) (int, error) {
	fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	for _, comp := range strings.Split(dir, "/") {
		if comp == "" || comp == "." {
			continue
		}
		next, err := retryEINTR(func() (int, error) {
			return unix.Openat(fd, comp, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		})
		_ = unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = next
		st, err := fstat(fd)
		switch {
		case err != nil:
		case st.isSymlink():
			err = ErrSymlink
		case !st.isDir():
			err = unix.ENOTDIR
		}
		if err != nil {
			_ = unix.Close(fd)
			return -1, err
		}
	}
	return fd, nil
}

// pathError wraps a failed system call on path. The validation errors of this
// package are returned unwrapped.
func pathError(op, path string, err error) error {
	if errors.Is(err, ErrSymlink) {
		return ErrSymlink
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return err
	}
	return &fs.PathError{Op: op, Path: path, Err: err}
}

// retryEINTR calls f until it fails with something other than EINTR.
func retryEINTR(f func() (int, error)) (int, error) {
	for {
		fd, err := f()
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}
