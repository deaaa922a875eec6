//go:build linux

package fshelper

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Copy copies src to dst, looking at src itself (lstat):
//
//   - a regular file is copied over dst with src's permission bits, the way
//     WriteFile replaces a file (a failed copy leaves an existing dst intact,
//     a link at dst is followed); copying a file onto itself leaves it
//     unchanged;
//   - a symbolic link becomes an identical link at dst (EEXIST if dst exists);
//   - a directory needs Recursive (ErrCopyNeedsRecursive), must not contain
//     dst (ErrCopyIntoSelf, checked on the resolved paths), and is copied with
//     its contents: dst and missing parents are created like mkdir -p, nested
//     files are copied, nested links are recreated, and other special files
//     (FIFOs, sockets, devices) are skipped;
//   - anything else gives ErrCopyUnsupported, without opening it.
//
// Errors wrap the errno of the failed call; a copy that fails part way leaves
// what it copied so far.
func Copy(src, dst string, opts CopyOptions) error {
	st, err := statAt(unix.AT_FDCWD, src, unix.AT_SYMLINK_NOFOLLOW)
	if err != nil {
		return pathError("stat", src, err)
	}
	switch {
	case st.isDir():
		if !opts.Recursive {
			return ErrCopyNeedsRecursive
		}
		inside, err := isSameOrDescendant(src, dst)
		if err != nil {
			return err
		}
		if inside {
			return ErrCopyIntoSelf
		}
		return copyDir(src, dst)
	case st.isSymlink():
		return copySymlink(src, dst)
	case st.isRegular():
		return copyFile(src, dst)
	default:
		return ErrCopyUnsupported
	}
}

// copyDir copies the directory src into dst, which it creates if needed.
func copyDir(src, dst string) error {
	if err := mkdirAll(dst); err != nil {
		return err
	}
	dir, err := os.Open(src)
	if err != nil {
		return err
	}
	defer dir.Close()
	for {
		entries, rerr := dir.ReadDir(readBatch)
		for _, e := range entries {
			from, to := filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())
			var err error
			switch e.Type() & fs.ModeType {
			case fs.ModeDir:
				err = copyDir(from, to)
			case 0:
				err = copyFile(from, to)
			case fs.ModeSymlink:
				err = copySymlink(from, to)
			}
			if err != nil {
				return err
			}
		}
		if errors.Is(rerr, io.EOF) {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// copyFile copies the regular file src over dst. The source is opened
// non-blocking and without following a link, so a FIFO or link swapped in
// after the lstat is refused instead of blocking or being followed.
func copyFile(src, dst string) error {
	fd, err := retryEINTR(func() (int, error) {
		return unix.Open(src, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	})
	if errors.Is(err, unix.ELOOP) {
		return ErrCopyUnsupported
	}
	if err != nil {
		return pathError("open", src, err)
	}
	st, err := fstat(fd)
	switch {
	case err != nil:
		err = pathError("stat", src, err)
	case !st.isRegular():
		err = ErrCopyUnsupported
	default:
		if err = unix.SetNonblock(fd, false); err != nil {
			err = pathError("fcntl", src, err)
		}
	}
	if err != nil {
		_ = unix.Close(fd)
		return err
	}
	in := os.NewFile(uintptr(fd), src)
	defer in.Close()
	t, dst0, exists, err := finalTarget(dst, false)
	if err != nil {
		return err
	}
	defer t.close()
	if exists && dst0.dev == st.dev && dst0.ino == st.ino {
		return nil // copying a file onto itself leaves it unchanged
	}
	// Like Rust's fs::copy, the destination gets the source's permission
	// bits; a new one has them less the umask.
	o := replaceOpts{perm: st.mode & 0o7777, setMode: true, size: int64(st.size)}
	return replaceFile(t, dst0, exists, o, copyAll(in))
}

// copySymlink creates at dst a link with the same target as the link src.
func copySymlink(src, dst string) error {
	linkTarget, err := os.Readlink(src)
	if err != nil {
		return err
	}
	return os.Symlink(linkTarget, dst)
}

// isSameOrDescendant reports whether dst, resolved as far as it exists, is
// src (resolved) or lies below it.
func isSameOrDescendant(src, dst string) (bool, error) {
	realSrc, err := filepath.EvalSymlinks(src)
	if err != nil {
		return false, err
	}
	realDst, err := resolveExisting(dst)
	if err != nil {
		return false, err
	}
	return realSrc == "/" || realDst == realSrc || strings.HasPrefix(realDst, realSrc+"/"), nil
}

// resolveExisting canonicalises the longest existing prefix of path and
// appends the rest unchanged.
func resolveExisting(path string) (string, error) {
	var suffix []string
	existing := path
	for {
		if _, err := os.Stat(existing); err == nil {
			break
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			break
		}
		suffix = append(suffix, filepath.Base(existing))
		existing = parent
	}
	resolved, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return "", err
	}
	for i := len(suffix) - 1; i >= 0; i-- {
		resolved = filepath.Join(resolved, suffix[i])
	}
	return resolved, nil
}

// Canonicalize returns the absolute path of path with every symbolic link,
// "." and ".." resolved (realpath). A missing component wraps fs.ErrNotExist.
func Canonicalize(path string) (string, error) {
	return filepath.EvalSymlinks(path)
}
