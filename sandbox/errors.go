package sandbox

import (
	"errors"
	"fmt"
)

// Sentinels of the policy layer. Binding packages map them to wire codes
// with errors.Is (docs/development.md §3.3).
var (
	// ErrInvalidPolicy marks a sandbox object, profile or legacy policy that
	// does not parse or is not allowed. The wire maps it to -32602 on
	// process/start and to -32600 on fs/* methods. The error's own text is
	// the client-visible message.
	ErrInvalidPolicy = errors.New("invalid sandbox policy")

	// ErrUnenforceable marks a policy that this executor cannot enforce
	// (docs/sandbox.md §4.1). Its text is the process/start message; fs methods
	// say "filesystem sandbox cannot be enforced on this executor" instead.
	ErrUnenforceable = errors.New("sandbox intent cannot be enforced on this executor")

	// ErrSymlinkCrossing marks a read-only or deny-read path that is reached
	// through a symlink inside a writable root (docs/sandbox.md §3.4). The
	// reference reports it from inside the helper: the command fails with
	// exit 1 and the text on stderr.
	ErrSymlinkCrossing = errors.New("sandbox path crosses writable symlink")

	// ErrPrepare marks a failure while preparing a plan (glob expansion,
	// walking the filesystem). The wire says "failed to prepare process
	// sandbox: <text>" (-32602) or "failed to prepare fs sandbox: <text>"
	// (-32600), with the error's own text.
	ErrPrepare = errors.New("failed to prepare sandbox")
)

// InvalidPolicyError is a parse or validation failure. Error returns the
// exact client-visible message; errors.Is matches ErrInvalidPolicy and, when
// set, the cause (a wire path error keeps its own code that way).
type InvalidPolicyError struct {
	Msg   string
	Cause error
}

// Error returns the message.
func (e *InvalidPolicyError) Error() string { return e.Msg }

// Unwrap returns ErrInvalidPolicy and the cause, if any.
func (e *InvalidPolicyError) Unwrap() []error {
	if e.Cause == nil {
		return []error{ErrInvalidPolicy}
	}
	return []error{ErrInvalidPolicy, e.Cause}
}

// invalidf builds an InvalidPolicyError with a formatted message.
func invalidf(format string, args ...any) error {
	return &InvalidPolicyError{Msg: fmt.Sprintf(format, args...)}
}

// invalidCause builds an InvalidPolicyError whose message is the cause's.
func invalidCause(cause error) error {
	return &InvalidPolicyError{Msg: cause.Error(), Cause: cause}
}

// SymlinkCrossingError is the fail-closed refusal of docs/sandbox.md §3.4: Path
// (a read-only carve-out or a deny path) is reached through Symlink, which
// lives inside a writable root and could be re-pointed by the command.
type SymlinkCrossingError struct {
	// Deny is true for a deny-read path, false for a read-only path.
	Deny    bool
	Path    string
	Symlink string
}

// Error returns the exact reference text.
func (e *SymlinkCrossingError) Error() string {
	kind := "read-only"
	if e.Deny {
		kind = "deny-read"
	}
	return fmt.Sprintf("cannot enforce sandbox %s path %s because it crosses writable symlink %s",
		kind, e.Path, e.Symlink)
}

// Is matches ErrSymlinkCrossing.
func (e *SymlinkCrossingError) Is(target error) bool { return target == ErrSymlinkCrossing }

// PrepareError is a failure while preparing a plan; errors.Is matches
// ErrPrepare. Error returns only the detail, so callers can prefix the
// wire's own wording.
type PrepareError struct {
	Err error
}

// Error returns the detail.
func (e *PrepareError) Error() string { return e.Err.Error() }

// Unwrap returns ErrPrepare and the underlying error.
func (e *PrepareError) Unwrap() []error { return []error{ErrPrepare, e.Err} }

// preparef builds a PrepareError with a formatted detail.
func preparef(format string, args ...any) error {
	return &PrepareError{Err: fmt.Errorf(format, args...)}
}
