//go:build linux

package fshelper

import (
	"errors"
	"io"
	"os"
	"slices"

	"golang.org/x/sys/unix"
)

// ReadFile returns the contents of the regular file at path.
//
// A directory, FIFO, device or socket gives a *NotFileError; a FIFO is
// recognised before it is opened, and opened non-blocking in case it appears
// concurrently, so the call never blocks on one. A file larger than
// MaxReadSize, at the start or while it is read, gives ErrTooLarge. Other
// failures wrap the errno (fs.ErrNotExist for a missing path).
func ReadFile(path string, opts Options) ([]byte, error) {
	t, err := resolve(path, opts.NoFollowSymlinks)
	if err != nil {
		return nil, err
	}
	defer t.close()
	st, err := t.stat()
	if err != nil {
		return nil, err
	}
	if err := checkReadable(path, st); err != nil {
		return nil, err
	}
	// O_NONBLOCK: a FIFO swapped in after the stat must not block the open.
	fd, err := t.open(unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if st, err = openedRegular(fd, path); err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	return readBounded(f, st.size)
}

// openedRegular checks that the descriptor fd, opened non-blocking, is a
// regular file ReadFile may read, then puts it back in blocking mode.
func openedRegular(fd int, path string) (fileStat, error) {
	st, err := fstat(fd)
	if err != nil {
		return fileStat{}, pathError("stat", path, err)
	}
	if err := checkReadable(path, st); err != nil {
		return fileStat{}, err
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		return fileStat{}, pathError("fcntl", path, err)
	}
	return st, nil
}

// checkReadable refuses what ReadFile must not read.
func checkReadable(path string, st fileStat) error {
	if !st.isRegular() {
		return &NotFileError{Path: path}
	}
	if st.size > MaxReadSize {
		return ErrTooLarge
	}
	return nil
}

// readBounded reads f to EOF, expecting about size bytes, and gives
// ErrTooLarge once more than MaxReadSize bytes arrive (a growing file).
func readBounded(f *os.File, size uint64) ([]byte, error) {
	// One byte more than expected, so that EOF is seen without growing.
	buf := make([]byte, 0, min(size, MaxReadSize)+1)
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, 64<<10)
		}
		n, err := f.Read(buf[len(buf):min(cap(buf), MaxReadSize+1)])
		buf = buf[:len(buf)+n]
		if len(buf) > MaxReadSize {
			return nil, ErrTooLarge
		}
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// WriteFile creates the file at path, or replaces its contents, with data.
// A failed write leaves the old file intact and no temporary file behind;
// a symbolic link (when followed) keeps being a link and its target gets
// the data; see atomic_linux.go for hard links, FIFOs and devices. The
// parent directory must exist: otherwise the error wraps fs.ErrNotExist and
// nothing is created. A new file gets mode 0666 less the umask; an existing
// one keeps its mode and owner. A FIFO without a reader gives ENXIO instead
// of blocking.
func WriteFile(path string, data []byte, opts Options) error {
	t, st, exists, err := finalTarget(path, opts.NoFollowSymlinks)
	if err != nil {
		return err
	}
	defer t.close()
	return replaceFile(t, st, exists, replaceOpts{perm: 0o666, size: int64(len(data))}, writeAll(data))
}

// GetMetadata describes path. When following symbolic links, the type, size
// and times are those of the final target (a dangling link wraps
// fs.ErrNotExist) and IsSymlink tells whether path itself is a link. With
// NoFollowSymlinks, a link anywhere gives ErrSymlink, so IsSymlink is false.
func GetMetadata(path string, opts Options) (Metadata, error) {
	t, err := resolve(path, opts.NoFollowSymlinks)
	if err != nil {
		return Metadata{}, err
	}
	defer t.close()
	st, err := t.stat()
	if err != nil {
		return Metadata{}, err
	}
	md := Metadata{
		IsDirectory: st.isDir(),
		IsFile:      st.isRegular(),
		Size:        st.size,
		Created:     st.created,
		Modified:    st.modified,
	}
	if !t.noFollow {
		lst, err := t.lstat()
		if err != nil {
			return Metadata{}, err
		}
		md.IsSymlink = lst.isSymlink()
	}
	return md, nil
}
