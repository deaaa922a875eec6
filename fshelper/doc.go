// Package fshelper implements the filesystem methods of the exec-server
// (docs/protocol.md §6.11): plain, bounded filesystem operations and their
// JSON-RPC bindings.
//
// # Operations
//
// ReadFile, WriteFile, CreateDirectory, GetMetadata, ReadDirectory, Remove,
// Copy and Canonicalize take native absolute paths and return Go values. Their
// errors wrap the OS errno (errors.Is(err, fs.ErrNotExist) and
// errors.Is(err, syscall.EROFS) work) or are one of the validation errors
// declared in errors.go (ErrSymlink, ErrTooLarge, ErrNotFile, …). The
// operations keep no state and are safe for concurrent use. They block for the
// duration of the system calls and cannot be cancelled part way.
//
// Every operation is bounded: ReadFile refuses files larger than MaxReadSize
// and ReadDirectory directories with more than MaxDirectoryEntries entries.
// FIFOs and devices are recognised before they are read, so a FIFO never
// blocks a call.
//
// # Replacing files
//
// WriteFile and the file case of Copy never leave a half-written file: the
// new content goes to a temporary file in the same directory that takes the
// old file's owner and mode and is renamed over it, so a failed write
// (ENOSPC, EIO) leaves the old content and no temporary file. A link that
// is followed keeps being a link (its target is replaced); a file with
// several hard links is written in place after its space was reserved, so
// that its other names keep seeing it; FIFOs and devices are written in
// place. atomic_linux.go gives the details and the reasons.
//
// # Symbolic links
//
// With NoFollowSymlinks set, an operation refuses any symbolic link in any
// component of its path, the last one included, with ErrSymlink. The parent
// directory is opened with openat2(RESOLVE_NO_SYMLINKS), or by a component walk
// with O_NOFOLLOW where openat2 is unavailable, and the last component is then
// handled with the *at system calls and no-follow flags, so a link swapped in
// concurrently is refused too.
//
// # Bindings
//
// Handlers returns the fs/* request handlers. They decode params with the rpc
// codec (so path errors are the codec's -32602 errors), run the operation and
// map failures to wire errors with WireError, the single place that applies the
// error table of docs/protocol.md §3.
//
// A call whose sandbox must be enforced (a restricted filesystem policy
// without full-disk write, docs/protocol.md §8.2) does not run in the server: it
// runs in our own binary re-executed as the sandbox helper in `--fs-helper`
// mode, which reads one JSON request line on stdin and writes one response
// line (ChildMain, docs/protocol.md §8.3). A denied write then fails as in the reference,
// with -32603 Read-only file system (os error 30). Every other call runs
// directly.
//
// # Watching missing paths
//
// MissingWatcher is the one watch slot of a connection (fs/watchMissing,
// docs/protocol.md §6.11.1), and ConnHandlers its binding, made once per
// connection and ended with it. A watch walks each path from the root
// without following symbolic links, puts inotify on the folders it opened
// (or polls, beyond MaxWatchedDirs or without inotify) and notifies once.
//
// # File handles
//
// Handles is a connection's table of file handles (fs/open, fs/readBlock,
// fs/writeBlock, fs/close; docs/protocol.md §6.11.3), also bound by
// ConnHandlers. A handle is an open descriptor, read and written with pread
// and pwrite, never by path. A sandboxed open runs in the fs helper, which
// sends the descriptor back over a socket (handles_sandboxed_linux.go).
package fshelper
