package escalate

import (
	"context"
	"os"
)

// Request is one exec a command of a shell call asked for.
type Request struct {
	// File is the program the kernel would run, absolute and lexically
	// clean (a relative path is resolved against Workdir; symlinks are
	// not followed).
	File string
	// Argv is the argument vector as the command passed it, argv[0]
	// included (it may differ from File's base name).
	Argv []string
	// Workdir is the absolute working directory of the exec.
	Workdir string
	// Env is the environment the exec would pass, exactly.
	Env map[string]string
	// Exe, when not nil, is File as the kernel will run it for the
	// command, opened (O_PATH) in the command's own view: its mount
	// namespace, root and working directory (for an execveat of a
	// descriptor, that descriptor's file, a memfd included). nil when the
	// interceptor cannot tell (the wrapper): File is then the server's
	// view. It belongs to the interceptor and is valid until Decide
	// returns.
	Exe *os.File
	// Peer, when not 0, is the pid of the process that asked over the
	// escalate socket (the creator of the session's socket, SO_PEERCRED;
	// -1 when it cannot be told): Workdir is its word, and must be where
	// that process is. 0: Workdir was read from the process itself
	// (ptrace).
	Peer int
	// Open, when not nil, opens a path (absolute, or relative to
	// Workdir) as the kernel would for the exec'ing process, following
	// symlinks, O_PATH: for a script's interpreter and the program a
	// dynamic loader is asked to run. nil means the server's view.
	Open func(path string) (*os.File, error)
}

// Action is what happens to an exec.
type Action int

const (
	// Run lets the exec proceed where it is: inside the sandbox.
	Run Action = iota
	// Escalate runs the program outside the sandbox on the command's
	// stdin, stdout and stderr; the command ends with its exit code.
	Escalate
	// Deny refuses the exec: `Execution denied[: reason]` on the
	// command's stderr and exit code 1.
	Deny
)

// Decision is the verdict on one Request. Reason is used by Deny only;
// nil means no reason (the wire's null).
type Decision struct {
	Action Action
	Reason *string
	// Program is the file an Escalate runs: the one that was judged,
	// opened at decision time. Required for Escalate (the Escalator runs
	// nothing else); the receiver of the Decision closes it.
	Program *Program
	// Note, for Run, says why an exec a rule allowed runs in the sandbox
	// after all (docs/shell-tool.md §11.1); the interceptor shows it on
	// the command's stderr when it can.
	Note string
}

// Close releases d's Program, if any.
func (d Decision) Close() {
	if d.Program != nil {
		d.Program.Close()
	}
}

// Decider judges exec requests. Decide may block (for example while the
// user is asked); it must return when ctx is done, then with a Deny.
// Implementations must be safe for concurrent use.
type Decider interface {
	Decide(ctx context.Context, r Request) Decision
}
