package proc

import (
	"errors"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/codexec/codex/wire"
	"go.uber.org/zap"
)

// Stream identifies where an output chunk was read from.
type Stream uint8

// The output streams of a process. A pipe-mode process has StreamStdout and
// StreamStderr; a PTY process has only StreamPTY (docs/protocol.md §7.4).
const (
	StreamStdout Stream = iota
	StreamStderr
	StreamPTY
)

// String returns the wire label of s: "stdout", "stderr" or "pty".
func (s Stream) String() string {
	switch s {
	case StreamStdout:
		return wire.StreamStdout
	case StreamStderr:
		return wire.StreamStderr
	case StreamPTY:
		return wire.StreamPTY
	}
	return "stream(" + strconv.Itoa(int(s)) + ")"
}

// Spec describes one process to start. It is a plain value: Start copies
// what it needs and never modifies it.
type Spec struct {
	// Argv is the command line; it must not be empty. Argv[0] is resolved
	// with execvp(3) semantics against the PATH in Env (the child's
	// environment, not the server's); an unset PATH means "/bin:/usr/bin".
	// A name containing '/' is used as is, relative to Dir.
	Argv []string

	// Arg0, if non-empty, is the argv[0] the child sees. The program run is
	// still the one Argv[0] resolves to. Empty means Argv[0].
	Arg0 string

	// Dir is the working directory of the child. It should be absolute and
	// must exist: a missing Dir fails Start with an error matching
	// syscall.ENOENT. Empty means the server's working directory.
	Dir string

	// Env is the exact environment of the child, as "KEY=value" strings.
	// Nothing is added: nil or empty means an empty environment.
	Env []string

	// TTY runs the child on a new pseudo-terminal that is its controlling
	// terminal and its fds 0, 1 and 2. Output then arrives as StreamPTY.
	TTY bool

	// Rows and Cols are the initial PTY size; zero means 24 rows and 80
	// columns. Ignored without TTY.
	Rows, Cols uint16

	// PipeStdin gives a non-PTY child a writable stdin pipe. False means the
	// child's stdin is /dev/null and Process.Write returns ErrStdinClosed.
	// Ignored with TTY (the PTY is always writable).
	PipeStdin bool

	// Launcher, when not nil, starts the command through the program that
	// confines it (execserver passes the sandbox helper's,
	// sandbox.NewLauncher). The server process itself is never restricted.
	Launcher Launcher
}

// Launcher starts a command through a program that confines it first, the
// sandbox helper: its maker (execserver) prepared it from a sandbox plan,
// so that proc knows nothing of sandboxes. Start uses a launcher once: for
// a TTY command OpenPTY, then Apply right before the fork, then Close,
// whatever happened.
type Launcher interface {
	// OpenPTY opens the terminal of a TTY command, for a launcher that
	// gives the command a terminal of its own; nil files mean a terminal
	// of the host, and so does an error (logged at debug).
	OpenPTY() (master, slave *os.File, err error)
	// Apply is given the command as Start resolved it (path found in the
	// child's PATH, argv with the argv[0] the child sees), attr, the
	// attributes of the command itself (fds 0-2, Dir, Env, Sys), and
	// leafFD, the cgroup leaf the process starts in (-1: none). It turns
	// attr into the launcher's and returns the program and argv to fork
	// instead.
	Apply(path string, argv []string, attr *syscall.ProcAttr, leafFD int) (string, []string, error)
	// Close releases what the launcher kept for the fork.
	Close() error
}

// OutputFunc receives each chunk read from the OS, in order per stream.
//
// b is only lent: it is valid for the duration of the call and is reused
// for later reads, so the function must copy what it keeps. It is called
// from the stream's reader goroutine, or, for the bytes that preceded the
// exit (see Process.ExitFlushed), from the wait goroutine; never twice at
// once for one stream. It may block: that is the
// backpressure, since the child blocks once the pipe or PTY fills. It is never called after the process's OutputDone
// channel is closed. It must not call Process.Close.
type OutputFunc func(s Stream, b []byte)

// Options configures Start. The zero value is valid.
type Options struct {
	// Tree kills whole process trees, including descendants that called
	// setsid. Nil means Kill reaches only the child's process group. A
	// server should pass its one TreeKiller to every Start.
	Tree *TreeKiller

	// Logger receives debug and error logs about the process. Nil means no
	// logging.
	Logger *zap.Logger

	// Credit bounds the chunks in flight of a group of processes (see
	// OutputCredit). Nil means no bound beyond the OutputFunc's own
	// backpressure.
	Credit *OutputCredit
}

// Sentinel errors returned by Process methods. Test for them with errors.Is.
var (
	// ErrStdinClosed means the process has no writable stdin: it was started
	// without PipeStdin, CloseStdin was called, or the child closed its end.
	ErrStdinClosed = errors.New("proc: stdin is closed")

	// ErrNotPTY is returned by Resize for a process started without TTY.
	ErrNotPTY = errors.New("proc: process has no pty")

	// ErrPTYStdin is returned by CloseStdin for a PTY process: its input is
	// the terminal, which cannot be closed without closing its output.
	ErrPTYStdin = errors.New("proc: the stdin of a pty process cannot be closed")

	// ErrQueueFull is returned by WriteAsync when the stdin queue is full
	// and the caller declined to park the write.
	ErrQueueFull = errors.New("proc: stdin queue is full")
)

// Defaults and limits (docs/protocol.md §11).
const (
	// DefaultRows and DefaultCols are the PTY size when Spec leaves it zero.
	DefaultRows, DefaultCols = 24, 80

	// StdinQueueLen is how many chunks Write queues before it blocks.
	StdinQueueLen = 128

	// StdinQueueBytes caps the bytes Write queues (a single larger chunk
	// is queued alone), so that 128 large chunks are not all held at once.
	StdinQueueBytes = 1 << 20

	// KillGrace is how long Kill waits for the output streams to reach EOF
	// before it force-closes the parent's read ends.
	KillGrace = 2 * time.Second

	// readSize is the read buffer size for pipes and the PTY master. A
	// pipe that fills a 64 KiB read is grown to bigPipe, so a sustained
	// stream is read in chunks of up to readSize.
	readSize = 256 << 10
	bigPipe  = 1 << 20
)

// size returns the PTY size of s with the defaults applied.
func (s *Spec) size() (rows, cols uint16) {
	rows, cols = s.Rows, s.Cols
	if rows == 0 {
		rows = DefaultRows
	}
	if cols == 0 {
		cols = DefaultCols
	}
	return rows, cols
}

// argv returns the argument vector the child sees.
func (s *Spec) argv() []string {
	argv := append([]string(nil), s.Argv...)
	if s.Arg0 != "" {
		argv[0] = s.Arg0
	}
	return argv
}
