package execpolicy

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
)

// FileError is a failure to read or to load one rules file. Every error of
// LoadFiles and LoadLayers is one.
type FileError struct {
	Op   string // "read" or "parse"
	Path string
	Err  error
}

// Error names the file, then the cause: "failed to parse policy at
// x.rules: invalid decision: ask".
func (e *FileError) Error() string { return e.Context() + ": " + e.Cause() }

// Unwrap returns the cause.
func (e *FileError) Unwrap() error { return e.Err }

// Context is the first line the reference prints for this error
// ("failed to read policy at x.rules").
func (e *FileError) Context() string {
	return fmt.Sprintf("failed to %s policy at %s", e.Op, e.Path)
}

// Cause is the cause as the reference prints it: an OS error as
// "No such file or directory (os error 2)", others as they are.
func (e *FileError) Cause() string {
	var errno syscall.Errno
	if errors.As(e.Err, &errno) {
		s := errno.Error()
		return strings.ToUpper(s[:1]) + s[1:] + fmt.Sprintf(" (os error %d)", int(errno))
	}
	return e.Err.Error()
}

// ruleError is an error raised by a builtin; its text is the whole message
// ("invalid decision: ask").
type ruleError struct{ msg string }

func (e *ruleError) Error() string { return e.msg }

func errorf(format string, args ...any) error {
	return &ruleError{fmt.Sprintf(format, args...)}
}

// exampleError is a failed match/not_match check of a rule's examples.
type exampleError struct{ msg string }

func (e *exampleError) Error() string { return e.msg }
