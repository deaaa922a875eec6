package fshelper

import (
	"context"
	"errors"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/codexec/codex/wire"
)

// The file handles of one connection (fs/open, fs/readBlock, fs/writeBlock,
// fs/close; docs/protocol.md §6.11.3). A handle is an open file descriptor
// and nothing else: blocks are read and written with pread and pwrite on
// it, never by path, so what a handle reaches is fixed when it is opened.
// A sandboxed open happens inside the fs helper under the request's
// sandbox, which hands the opened descriptor back over a socket
// (openSandboxed): the server never resolves the path itself.

// Handles is the file-handle table of one connection, at most
// wire.MaxFileHandles entries. It is safe for concurrent use. Close closes
// every handle and refuses later opens; the connection calls it when it
// ends.
type Handles struct {
	env []string // the fs helper's environment (helperEnv)

	mu     sync.Mutex
	files  map[string]*handle // nil entry: an open in progress
	closed bool
}

// handle is one open file. os.File counts the calls in progress, so a
// close while a block is read or written waits for it before the
// descriptor is released, and its number cannot be reused under the call.
type handle struct {
	f     *os.File
	write bool
}

// NewHandles returns an empty table whose sandboxed opens run the fs
// helper with env, the environment the server gives its children.
func NewHandles(env []string) *Handles {
	return &Handles{env: helperEnv(env), files: map[string]*handle{}}
}

// Open opens p.Path as handle p.HandleID: for reading, following symbolic
// links, a regular file only; or, with mode replace, for writing, created
// or truncated at once (mode 0666 less the umask). A sandbox that must be
// enforced (as for the other fs methods) makes the open happen inside the
// fs helper. The id must not be open already, and at most
// wire.MaxFileHandles may be open.
func (hs *Handles) Open(ctx context.Context, p *wire.OpenParams) error {
	hs.mu.Lock()
	switch _, taken := hs.files[p.HandleID]; {
	case hs.closed:
		hs.mu.Unlock()
		return errors.New("the connection is closed")
	case taken:
		hs.mu.Unlock()
		return wire.ErrFileHandleExists(p.HandleID)
	case len(hs.files) >= wire.MaxFileHandles:
		hs.mu.Unlock()
		return wire.ErrTooManyFileHandles()
	}
	hs.files[p.HandleID] = nil // reserved while the file opens
	hs.mu.Unlock()

	f, err := hs.open(ctx, p)

	hs.mu.Lock()
	defer hs.mu.Unlock()
	if err != nil || hs.closed {
		delete(hs.files, p.HandleID)
		if err == nil {
			_ = f.Close()
			return errors.New("the connection is closed")
		}
		return err
	}
	hs.files[p.HandleID] = &handle{f: f, write: p.Replace()}
	return nil
}

func (hs *Handles) open(ctx context.Context, p *wire.OpenParams) (*os.File, error) {
	if f, handled, err := openSandboxed(ctx, p, hs.env); handled {
		return f, err
	}
	return openForHandle(p.Path.Native, p.Replace())
}

// openForHandle opens path for a handle, in this process: the server's
// direct open, and the fs helper's inside its sandbox. Non-blocking, so
// that a FIFO neither blocks the open (ENXIO for writing without a reader)
// nor is taken: anything but a regular file is refused once open.
func openForHandle(path string, replace bool) (*os.File, error) {
	flags := unix.O_RDONLY
	if replace {
		flags = unix.O_WRONLY | unix.O_CREAT | unix.O_TRUNC
	}
	fd, err := retryEINTR(func() (int, error) {
		return unix.Open(path, flags|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o666)
	})
	if err != nil {
		return nil, pathError("open", path, err)
	}
	if err := checkHandleFD(fd, path, replace); err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}

// checkHandleFD checks that fd is a regular file open for what the handle
// does (reading, or writing only), and puts it in blocking mode. The server
// also runs it on a descriptor the fs helper sent, which it trusts no
// further than this.
func checkHandleFD(fd int, path string, replace bool) error {
	st, err := fstat(fd)
	if err != nil {
		return pathError("stat", path, err)
	}
	if !st.isRegular() {
		return &NotFileError{Path: path}
	}
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return pathError("fcntl", path, err)
	}
	want := unix.O_RDONLY
	if replace {
		want = unix.O_WRONLY
	}
	if fl&unix.O_ACCMODE != want || fl&unix.O_PATH != 0 {
		return pathError("open", path, unix.EBADF)
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		return pathError("fcntl", path, err)
	}
	return nil
}

// lookup returns the open handle id, or nil.
func (hs *Handles) lookup(id string) *handle {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return hs.files[id]
}

// drop removes h from the table, if it is still there, and closes it.
func (hs *Handles) drop(id string, h *handle) {
	hs.mu.Lock()
	if hs.files[id] == h {
		delete(hs.files, id)
	}
	hs.mu.Unlock()
	_ = h.f.Close()
}

// blockBuffers are the buffers of blocks in flight: a read block until
// its answer is written, a written block while it is written. Each holds
// a largest block, and the few bytes more a padded base64 decodes to.
var blockBuffers = sync.Pool{New: func() any {
	b := make([]byte, wire.MaxFileBlock+3)
	return &b
}}

// ReadBlock reads up to n bytes (1…wire.MaxFileBlock) at offset from
// handle id. eof is true when fewer than n bytes came back. A failed read
// closes the handle (a replace handle gives EBADF, and is gone after it),
// as in the reference. data is lent: the caller calls release once it is
// done with it (release is never nil).
func (hs *Handles) ReadBlock(id string, offset uint64, n uint64) (data []byte, eof bool, release func(), err error) {
	data, eof, bp, err := hs.readBlock(id, offset, n)
	if err != nil {
		if bp != nil {
			blockBuffers.Put(bp)
		}
		return nil, false, func() {}, err
	}
	return data, eof, func() { blockBuffers.Put(bp) }, nil
}

func (hs *Handles) readBlock(id string, offset uint64, n uint64) (data []byte, eof bool, bp *[]byte, err error) {
	if n < 1 || n > wire.MaxFileBlock {
		return nil, false, nil, wire.ErrReadBlockLen()
	}
	h := hs.lookup(id)
	if h == nil {
		return nil, false, nil, wire.ErrUnknownFileHandle(id)
	}
	bp = blockBuffers.Get().(*[]byte)
	buf := (*bp)[:n]
	got := 0
	rc, err := h.f.SyscallConn()
	if err != nil {
		hs.drop(id, h)
		return nil, false, bp, err
	}
	var rerr error
	cerr := rc.Read(func(fd uintptr) bool {
		for got < len(buf) {
			// The offset goes to the kernel as it came: one beyond the
			// signed range is its EINVAL, as in the reference.
			m, err := unix.Pread(int(fd), buf[got:], int64(offset+uint64(got)))
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil {
				rerr = err
				return true
			}
			if m == 0 {
				break
			}
			got += m
		}
		return true
	})
	if cerr != nil {
		rerr = cerr
	}
	if rerr != nil {
		hs.drop(id, h)
		return nil, false, bp, rerr
	}
	return buf[:got], got < len(buf), bp, nil
}

// WriteBlock writes data (1…wire.MaxFileBlock bytes) at offset to handle
// id. Unlike ReadBlock, a failed write leaves the handle open.
func (hs *Handles) WriteBlock(id string, offset uint64, data []byte) error {
	if len(data) < 1 || len(data) > wire.MaxFileBlock {
		return wire.ErrWriteBlockLen()
	}
	const maxOffset = 1<<63 - 1
	if offset > maxOffset-uint64(len(data)) {
		return wire.ErrWriteBlockRange()
	}
	h := hs.lookup(id)
	if h == nil {
		return wire.ErrUnknownFileHandle(id)
	}
	rc, err := h.f.SyscallConn()
	if err != nil {
		return err
	}
	var werr error
	cerr := rc.Write(func(fd uintptr) bool {
		for done := 0; done < len(data); {
			m, err := unix.Pwrite(int(fd), data[done:], int64(offset)+int64(done))
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil {
				werr = err
				return true
			}
			done += m
		}
		return true
	})
	if cerr != nil {
		return cerr
	}
	return werr
}

// CloseHandle closes handle id; an unknown id is no error.
func (hs *Handles) CloseHandle(id string) {
	if h := hs.lookup(id); h != nil {
		hs.drop(id, h)
	}
}

// Close closes every handle and makes later opens fail.
func (hs *Handles) Close() {
	hs.mu.Lock()
	files := hs.files
	hs.files, hs.closed = map[string]*handle{}, true
	hs.mu.Unlock()
	for _, h := range files {
		if h != nil {
			_ = h.f.Close()
		}
	}
}

// Len returns how many handles are open.
func (hs *Handles) Len() int {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	n := 0
	for _, h := range hs.files {
		if h != nil {
			n++
		}
	}
	return n
}
