// Package proc runs the processes of the exec-server: the OS mechanics of
// spawning, reading, writing, signalling and killing them (os/exec-style
// Start, Process, Spec), the child environment (BuildEnv), whole-tree
// killing and limits (TreeKiller) and the identification of sandboxed
// peers (TreeKiller.CheckPeer). It holds no server state: sessions, the
// event log and the process/* bindings are package execserver's, which
// imports proc and never the other way round.
//
// # Process mechanics
//
// Start runs one Spec and returns a Process. Every child gets a new session
// and process group (pgid = sid = pid), in pipe and PTY mode alike, has
// SIGTERM as parent-death signal (the forking OS thread is locked across the
// fork), starts with default signal handlers and an empty signal mask, and
// inherits no fd other than 0, 1 and 2. Argv[0] is resolved with execvp
// semantics against the PATH of the child's environment. Environment and
// working directory are exactly those of the Spec (docs/protocol.md §7.1-§7.3).
//
// A PTY child has the slave as fds 0-2 and as controlling terminal; the
// parent closes its slave copy right after the start and reads the master,
// whose EIO is EOF. Pipe children have separate stdout and stderr pipes and
// either a stdin pipe or /dev/null (docs/protocol.md §7.2, §7.4).
//
// An idle child costs no OS thread and no buffer: the exit is awaited by
// polling its pidfd in the Go netpoller, and output is read through
// RawConn callbacks that borrow a 64 KiB buffer from a pool only while data
// is ready. Each chunk is handed to the OutputFunc as a right-sized slice,
// in order per stream, on the stream's reader goroutine; a blocking
// OutputFunc is the backpressure that stalls the child.
//
// # Exit, EOF and kill semantics
//
// Exit and output EOF are independent (docs/development.md §3.5). Exited is closed when
// the direct child is reaped; ExitCode is then its status, 128+N after
// signal N, or -1. OutputDone is closed when every stream reached EOF, which
// a background descendant holding stdout can delay indefinitely: a normal
// exit never cuts the pipes. ExitFlushed is closed after Exited, once what
// the child wrote before its exit was delivered: a consumer publishing the
// exit after it keeps the natural order without waiting for descendants.
//
// Signal goes to the process group. Kill sends SIGKILL to the whole tree:
// the process group and, with a TreeKiller, every descendant including the
// ones that called setsid (cgroup v2 leaf per process, or a subreaper /proc
// walk where cgroup2 is unavailable; see TreeKiller and docs/protocol.md §7.8). After a
// Kill, output that has not reached EOF within KillGrace is force-closed,
// so OutputDone always fires. Close kills what still runs, waits for every
// goroutine of the process and reaps it: no zombies are left behind. A
// descendant that outlived a normal exit and let go of the output is not
// killed by Close: CloseLeftovers hands it to the caller as Leftovers, to
// kill when the lifetime it belongs to (a session) ends.
package proc
