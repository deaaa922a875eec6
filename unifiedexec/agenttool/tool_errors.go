package agenttool

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Tool-level errors (docs/client.md §12). Their Error strings are the texts the model sees.
var (
	// ErrWriteToStdin is returned by WriteStdin when the server refused the
	// write (status unknownProcess, stdinClosed or starting).
	ErrWriteToStdin = errors.New("failed to write to stdin")
	// ErrSessionStdinClosed is returned by WriteStdin with non-empty chars
	// for a process started without tty.
	ErrSessionStdinClosed = errors.New("stdin is closed for this session; rerun exec_command with tty=true to keep stdin open")
	// ErrMissingCommandLine is returned by ExecCommand for an empty cmd.
	ErrMissingCommandLine = errors.New("missing command line for unified exec request")
	// ErrLoginShellDisabled is returned for login:true while login shells are
	// disabled by Config.AllowLoginShell.
	//
	//lint:ignore ST1005 the exact text the model sees (docs/client.md §12)
	ErrLoginShellDisabled = errors.New("login shell is disabled by config; omit `login` or set it to false.")
	// ErrUnavailable is returned by a Tools without a Backend.
	ErrUnavailable = errors.New("unified exec is unavailable in this session")
)

// CreateProcessError reports a failed spawn.
type CreateProcessError struct{ Err error }

func (e *CreateProcessError) Error() string {
	return "Failed to create unified exec process: " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *CreateProcessError) Unwrap() error { return e.Err }

// ProcessFailedError reports a process that failed, typically because the
// transport was lost.
type ProcessFailedError struct{ Message string }

func (e *ProcessFailedError) Error() string { return "Unified exec process failed: " + e.Message }

// UnknownProcessIDError reports a session id that is not (or no longer) in
// the store.
type UnknownProcessIDError struct{ ID int }

func (e *UnknownProcessIDError) Error() string { return "Unknown process id " + strconv.Itoa(e.ID) }

// SandboxDeniedError reports a run that the sandbox denied. Message is the
// truncated output or "Process exited with code N"; Output is the full
// collected output.
type SandboxDeniedError struct {
	Message  string
	Output   string
	ExitCode int
}

func (e *SandboxDeniedError) Error() string { return "Command denied by sandbox: " + e.Message }

// ExecCommandFailedMessage renders a non-denial ExecCommand error for the
// model: "exec_command failed for `<shell-quoted argv>`: <error>".
func ExecCommandFailedMessage(argv []string, err error) string {
	return fmt.Sprintf("exec_command failed for `%s`: %v", ShellJoin(argv), err)
}

// WriteStdinFailedMessage renders a WriteStdin error for the model.
func WriteStdinFailedMessage(err error) string { return "write_stdin failed: " + err.Error() }

// ShellJoin quotes argv for a POSIX shell, like Python's shlex.join.
func ShellJoin(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		parts[i] = shellQuote(a)
	}
	return strings.Join(parts, " ")
}

func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./-_", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}
