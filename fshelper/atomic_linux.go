//go:build linux

package fshelper

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Replacing a file's contents (fs/writeFile, and the destination of a file
// fs/copy) never leaves a half-written file behind:
//
//   - A regular file with one link, or a missing one, is written to a
//     temporary file in the same directory, given the old file's owner and
//     mode (or, for a copy, the source's mode), and renamed over the name.
//     A failure at any step (ENOSPC, EIO, a quota) removes the temporary file
//     and leaves the old file exactly as it was. The temporary name is
//     ".<name>.<32 random hex digits>.codex-tmp", created with O_EXCL and
//     O_NOFOLLOW, so no client name can collide with it or redirect it. The
//     data is not fsynced: the guarantee is against failed writes, not power
//     loss, as with the reference's plain write; ext4 and XFS flush a file
//     renamed over another anyway.
//   - A regular file with several hard links is written in place: replacing
//     it would silently detach this name from the others, which would keep
//     the old content — a surprise worse than the one being fixed. To keep
//     a full filesystem from truncating it, the space for the new content
//     is reserved first (fallocate, FALLOC_FL_KEEP_SIZE); the data is then
//     written over the old bytes and the file is cut to length. Where
//     fallocate is unsupported the write goes ahead as before.
//   - The same in-place path is taken when the directory refuses the
//     temporary file (EACCES, EPERM, EROFS: e.g. a writable file bound into
//     a read-only directory by a sandbox), when the name is a mount point
//     or may not be replaced (rename gives EBUSY, EACCES, EPERM), or when the old owner cannot be given to the
//     temporary file (chown EPERM).
//   - A FIFO, device or socket is opened and written in place, as before:
//     renaming over /dev/null would be a disaster.
//
// A symbolic link keeps being a link: when links are followed, the chain of
// links in the last component is resolved one readlinkat at a time relative
// to the directory descriptor holding each link, and the final target is
// replaced. Without following, a link anywhere gives ErrSymlink as before
// (the parent comes from openDirNoFollow, the last component is lstat'ed).

// maxLinkHops bounds the resolution of a chain of links (the kernel's
// limit is 40 as well).
const maxLinkHops = 40

// replaceOpts describe how replaceFile treats the mode.
type replaceOpts struct {
	perm    uint32 // permission bits of a new file (the umask applies)
	setMode bool   // give an existing file perm exactly (copy); otherwise keep its mode
	size    int64  // bytes fill will write, for the in-place space reservation
}

// finalTarget resolves path for a replacement: the directory descriptor
// and name of the file to replace (the end of a link chain when following),
// and its lstat, with exists false when nothing is there.
func finalTarget(path string, noFollow bool) (t *target, st fileStat, exists bool, err error) {
	if noFollow {
		t, err = resolve(path, true)
		if err != nil {
			return nil, fileStat{}, false, err
		}
		st, err = t.lstat()
		switch {
		case errors.Is(err, unix.ENOENT):
			return t, fileStat{}, false, nil
		case err != nil:
		case st.isSymlink():
			err = ErrSymlink
		default:
			return t, st, true, nil
		}
		t.close()
		return nil, fileStat{}, false, err
	}
	dir, name := splitLast(path)
	fd, err := openPathDir(unix.AT_FDCWD, dir)
	if err != nil {
		return nil, fileStat{}, false, pathError("open", path, err)
	}
	t = &target{dirfd: fd, name: name, path: path, noFollow: true}
	for range maxLinkHops {
		st, err = statAt(t.dirfd, t.name, unix.AT_SYMLINK_NOFOLLOW)
		if errors.Is(err, unix.ENOENT) {
			return t, fileStat{}, false, nil
		}
		if err != nil {
			t.close()
			return nil, fileStat{}, false, pathError("stat", path, err)
		}
		if !st.isSymlink() {
			return t, st, true, nil
		}
		link, err := readlinkAt(t.dirfd, t.name)
		if err != nil {
			t.close()
			return nil, fileStat{}, false, pathError("readlink", path, err)
		}
		ldir, lname := splitLast(link)
		nfd, err := openPathDir(t.dirfd, ldir)
		if err != nil {
			t.close()
			return nil, fileStat{}, false, pathError("open", path, err)
		}
		_ = unix.Close(t.dirfd)
		t.dirfd, t.name = nfd, lname
	}
	t.close()
	return nil, fileStat{}, false, pathError("open", path, unix.ELOOP)
}

// splitLast splits p at its last slash: ("a/b", "c") for "a/b/c", ("/",
// "c") for "/c", (".", "c") for "c". A p ending in a slash, or a last
// component of "." or "..", names a directory: its name is "." so that the
// operation fails with EISDIR on the directory itself.
func splitLast(p string) (dir, name string) {
	i := strings.LastIndexByte(p, '/')
	switch {
	case i < 0:
		dir, name = ".", p
	case i == 0:
		dir, name = "/", p[1:]
	default:
		dir, name = p[:i], p[i+1:]
	}
	if name == "" || name == "." || name == ".." {
		return p, "."
	}
	return dir, name
}

// openPathDir opens dir relative to dirfd as an O_PATH directory, following
// links (the caller asked for them to be followed).
func openPathDir(dirfd int, dir string) (int, error) {
	return retryEINTR(func() (int, error) {
		return unix.Openat(dirfd, dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
}

// readlinkAt returns the target of the link name in dirfd.
func readlinkAt(dirfd int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dirfd, name, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

// replaceFile gives the file t names the content fill writes (see the
// comment at the top of this file). st and exists describe what t names
// now. fill writes from offset 0 of f and returns the bytes written.
func replaceFile(t *target, st fileStat, exists bool, o replaceOpts, fill func(f *os.File) (int64, error)) error {
	switch {
	case !exists:
	case st.isDir():
		return pathError("open", t.path, unix.EISDIR)
	case !st.isRegular():
		return writeInPlace(t, o, fill)
	case st.nlink > 1:
		return writeInPlace(t, o, fill)
	}
	err := writeViaTemp(t, st, exists, o, fill)
	if errors.Is(err, errUseInPlace) {
		return writeInPlace(t, o, fill)
	}
	return err
}

// errUseInPlace tells replaceFile that the temporary-file path is not
// possible here and nothing has been changed.
var errUseInPlace = errors.New("fshelper: write in place")

// writeViaTemp writes a temporary file next to t and renames it over t.
func writeViaTemp(t *target, st fileStat, exists bool, o replaceOpts, fill func(f *os.File) (int64, error)) error {
	perm := o.perm
	if exists {
		perm = 0o600 // opened up below, once the owner is right
	}
	fd, tmp, err := createTemp(t.dirfd, t.name, perm)
	if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EROFS) {
		return errUseInPlace
	}
	if err != nil {
		return t.wrap("open", err)
	}
	f := os.NewFile(uintptr(fd), tmp)
	done := false
	defer func() {
		if !done {
			_ = f.Close()
			_ = unix.Unlinkat(t.dirfd, tmp, 0)
		}
	}()
	if exists {
		if st.uid != uint32(os.Geteuid()) || st.gid != uint32(os.Getegid()) {
			if err := unix.Fchown(fd, int(st.uid), int(st.gid)); err != nil {
				return errUseInPlace
			}
		}
	}
	if exists || o.setMode {
		mode := st.mode & 0o7777
		if o.setMode {
			mode = o.perm & 0o7777
		}
		// After the chown, which clears set-id bits.
		if err := unix.Fchmod(fd, mode); err != nil {
			return pathError("chmod", t.path, err)
		}
	}
	if _, err := fill(f); err != nil {
		return pathError("write", t.path, unwrapPathErr(err))
	}
	if err := f.Close(); err != nil {
		return pathError("write", t.path, unwrapPathErr(err))
	}
	err = unix.Renameat(t.dirfd, tmp, t.dirfd, t.name)
	if errors.Is(err, unix.EBUSY) || errors.Is(err, unix.EXDEV) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
		// A mount point, or a policy (Landlock) that lets the file be
		// written but not its name be replaced.
		_ = unix.Unlinkat(t.dirfd, tmp, 0)
		done = true
		return errUseInPlace
	}
	if err != nil {
		_ = unix.Unlinkat(t.dirfd, tmp, 0)
		done = true
		return pathError("rename", t.path, err)
	}
	done = true
	return nil
}

// createTemp creates a new file named ".<name>.<random>.codex-tmp" in
// dirfd, exclusively and without following a link.
func createTemp(dirfd int, name string, perm uint32) (int, string, error) {
	base := name
	if len(base) > 100 {
		base = base[:100] // stay below NAME_MAX with the suffix
	}
	for range 8 {
		var r [16]byte
		_, _ = rand.Read(r[:])
		tmp := "." + base + "." + hex.EncodeToString(r[:]) + ".codex-tmp"
		fd, err := retryEINTR(func() (int, error) {
			return unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
		})
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		return fd, tmp, err
	}
	return -1, "", unix.EEXIST
}

// writeInPlace writes over the file t names without replacing it: O_NONBLOCK
// keeps the open from waiting for a FIFO reader, and a regular file gets
// its space reserved before its first byte changes, then is cut to the new
// length after the write.
func writeInPlace(t *target, o replaceOpts, fill func(f *os.File) (int64, error)) error {
	fd, err := t.open(unix.O_WRONLY|unix.O_CREAT|unix.O_NONBLOCK, o.perm)
	if err != nil {
		return err
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		_ = unix.Close(fd)
		return t.wrap("fcntl", err)
	}
	f := os.NewFile(uintptr(fd), t.path)
	err = fillInPlace(f, fd, t.path, o, fill)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = pathError("write", t.path, unwrapPathErr(cerr))
	}
	return err
}

func fillInPlace(f *os.File, fd int, path string, o replaceOpts, fill func(f *os.File) (int64, error)) error {
	st, err := fstat(fd)
	if err != nil {
		return pathError("stat", path, err)
	}
	if !st.isRegular() {
		_, err := fill(f)
		return unwrapFill(path, err)
	}
	if o.size > 0 {
		err := unix.Fallocate(fd, unix.FALLOC_FL_KEEP_SIZE, 0, o.size)
		if err != nil && !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.ENOSYS) {
			return pathError("write", path, err)
		}
	}
	if o.setMode {
		if err := unix.Fchmod(fd, o.perm&0o7777); err != nil {
			return pathError("chmod", path, err)
		}
	}
	n, err := fill(f)
	if err != nil {
		return unwrapFill(path, err)
	}
	if err := unix.Ftruncate(fd, n); err != nil {
		return pathError("truncate", path, err)
	}
	return nil
}

func unwrapFill(path string, err error) error {
	if err == nil {
		return nil
	}
	return pathError("write", path, unwrapPathErr(err))
}

// unwrapPathErr strips an *os.PathError naming a descriptor so the caller
// can name the real path.
func unwrapPathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// writeAll is a fill function that writes data.
func writeAll(data []byte) func(f *os.File) (int64, error) {
	return func(f *os.File) (int64, error) {
		n, err := f.Write(data)
		return int64(n), err
	}
}

// copyAll is a fill function that copies in to the end.
func copyAll(in io.Reader) func(f *os.File) (int64, error) {
	return func(f *os.File) (int64, error) { return io.Copy(f, in) }
}
