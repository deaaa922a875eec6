package escalate

import "context"

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
}

// Decider judges exec requests. Decide may block (for example while the
// user is asked); it must return when ctx is done, then with a Deny.
// Implementations must be safe for concurrent use.
type Decider interface {
	Decide(ctx context.Context, r Request) Decision
}
