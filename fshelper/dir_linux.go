//go:build linux

package fshelper

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// CreateDirectory creates the directory path with mode 0777 less the umask.
//
// Non-recursive, a missing parent wraps fs.ErrNotExist and an existing path
// wraps EEXIST. Recursive works like Rust's create_dir_all: missing parents are
// created, an existing directory is a success, and an existing non-directory
// wraps EEXIST (ENOTDIR when it is a parent).
func CreateDirectory(path string, opts CreateDirectoryOptions) error {
	switch {
	case opts.Recursive && opts.NoFollowSymlinks:
		return mkdirAllNoFollow(path)
	case opts.Recursive:
		return mkdirAll(path)
	}
	t, err := resolve(path, opts.NoFollowSymlinks)
	if err != nil {
		return err
	}
	defer t.close()
	err = unix.Mkdirat(t.dirfd, t.name, 0o777)
	if errors.Is(err, unix.EEXIST) && t.noFollow {
		if st, serr := t.lstat(); serr == nil && st.isSymlink() {
			return ErrSymlink
		}
	}
	if err != nil {
		return t.wrap("mkdir", err)
	}
	return nil
}

// mkdirAll is create_dir_all: try the path, create the parent on ENOENT, and
// accept an error when the path is (now) a directory.
func mkdirAll(path string) error {
	err := unix.Mkdir(path, 0o777)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.ENOENT):
		parent := filepath.Dir(path)
		if parent == path {
			return pathError("mkdir", path, err)
		}
		if err := mkdirAll(parent); err != nil {
			return err
		}
		if err = unix.Mkdir(path, 0o777); err == nil {
			return nil
		}
	}
	if st, serr := statAt(unix.AT_FDCWD, path, 0); serr == nil && st.isDir() {
		return nil
	}
	return pathError("mkdir", path, err)
}

// mkdirAllNoFollow creates path component by component from the root without
// following a link: each component is created if missing, then opened with
// O_PATH|O_NOFOLLOW and checked to be a real directory.
func mkdirAllNoFollow(path string) error {
	fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return pathError("open", "/", err)
	}
	defer func() { _ = unix.Close(fd) }()
	comps := strings.Split(strings.Trim(path, "/"), "/")
	for i, comp := range comps {
		if comp == "" {
			continue
		}
		last := i == len(comps)-1
		if err := unix.Mkdirat(fd, comp, 0o777); err != nil && !errors.Is(err, unix.EEXIST) {
			return pathError("mkdir", path, err)
		}
		next, err := retryEINTR(func() (int, error) {
			return unix.Openat(fd, comp, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		})
		if err != nil {
			return pathError("open", path, err)
		}
		_ = unix.Close(fd)
		fd = next
		st, err := fstat(fd)
		switch {
		case err != nil:
			return pathError("stat", path, err)
		case st.isSymlink():
			return ErrSymlink
		case !st.isDir() && last:
			return pathError("mkdir", path, unix.EEXIST)
		case !st.isDir():
			return pathError("mkdir", path, unix.ENOTDIR)
		}
	}
	return nil
}

// readBatch is how many names are read from a directory at a time.
const readBatch = 1024

// ReadDirectory lists the directory at path in the order the OS returns
// (unsorted), following symbolic links: each entry has its target's type, and
// entries whose type cannot be read, dangling links among them, are omitted.
// A non-directory wraps ENOTDIR, without blocking even on a FIFO. A directory
// with more than MaxDirectoryEntries entries gives ErrTooManyEntries.
func ReadDirectory(path string) ([]DirEntry, error) {
	fd, err := retryEINTR(func() (int, error) {
		return unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return nil, pathError("open", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	entries := []DirEntry{}
	seen := 0
	for {
		names, err := f.Readdirnames(readBatch)
		if seen += len(names); seen > MaxDirectoryEntries {
			return nil, ErrTooManyEntries
		}
		for _, name := range names {
			st, serr := statAt(fd, name, 0)
			if serr != nil {
				continue
			}
			entries = append(entries, DirEntry{Name: name, IsDirectory: st.isDir(), IsFile: st.isRegular()})
		}
		if errors.Is(err, io.EOF) {
			return entries, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// Remove removes path without following its last component: a symbolic link
// is removed, not its target. A directory needs Recursive unless it is empty
// (ENOTEMPTY otherwise). A missing path wraps fs.ErrNotExist unless Force is
// set. With NoFollowSymlinks, a link anywhere in path, the last component
// included, gives ErrSymlink even with Force.
func Remove(path string, opts RemoveOptions) error {
	t, err := resolve(path, opts.NoFollowSymlinks)
	if err == nil {
		defer t.close()
		// stat refuses a link in no-follow mode; otherwise the link itself
		// is what gets removed.
		stat := t.lstat
		if t.noFollow {
			stat = t.stat
		}
		var st fileStat
		if st, err = stat(); err == nil {
			err = removeTarget(t, st, opts.Recursive)
		}
	}
	if opts.Force && errors.Is(err, unix.ENOENT) {
		return nil
	}
	return err
}

// removeTarget removes t, which st (an lstat result) describes.
func removeTarget(t *target, st fileStat, recursive bool) error {
	var err error
	switch {
	case !st.isDir():
		err = unix.Unlinkat(t.dirfd, t.name, 0)
	case recursive:
		err = removeAllAt(t.dirfd, t.name)
	default:
		err = unix.Unlinkat(t.dirfd, t.name, unix.AT_REMOVEDIR)
	}
	if err != nil {
		return t.wrap("remove", err)
	}
	return nil
}

// removeAllAt removes name, relative to dirfd, with everything under it. It
// never follows a link below name, and stops at the first failure. The
// directory is reopened after every batch of names, because removing entries
// while reading them may make the directory offset skip some.
func removeAllAt(dirfd int, name string) error {
	unlinkErr := unix.Unlinkat(dirfd, name, 0)
	if unlinkErr == nil || errors.Is(unlinkErr, unix.ENOENT) {
		return nil
	}
	if !errors.Is(unlinkErr, unix.EISDIR) && !errors.Is(unlinkErr, unix.EPERM) {
		return unlinkErr
	}
	for {
		fd, err := retryEINTR(func() (int, error) {
			return unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		})
		switch {
		case errors.Is(err, unix.ENOENT):
			return nil
		case errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.ELOOP):
			return unlinkErr // not a directory after all: EPERM was the answer
		case err != nil:
			return err
		}
		dir := os.NewFile(uintptr(fd), name)
		names, rerr := dir.Readdirnames(readBatch)
		for _, child := range names {
			if err := removeAllAt(fd, child); err != nil {
				dir.Close()
				return err
			}
		}
		dir.Close()
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return rerr
		}
		if len(names) == 0 {
			break
		}
	}
	err := unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	return err
}
