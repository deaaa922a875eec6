package agenttool

import (
	"context"
	"encoding/json"

	"github.com/codexec/codex/unifiedexec"
	"github.com/codexec/codex/wire"
)

// Backend is what the exec_command and write_stdin tools need from an
// exec-server session. An adapter over Client satisfies it: Start maps to
// process/start, and the returned handle to the started Process.
//
// Start must not return before the server answered process/start: the
// tools emit ExecCommandBegin right after it returns, never before (docs/client.md §5.2).
// Implementations must be safe for concurrent use.
type Backend interface {
	Start(ctx context.Context, req StartRequest) (ProcessHandle, error)
}

// ProcessHandle is one started exec-server process.
//
// The tools call Events exactly once, right after Start, and read the
// channel until it is closed. Other methods may be called concurrently with
// that reader and with each other.
type ProcessHandle interface {
	// ID returns the exec-server processId ("<n>-<uuid>").
	ID() string

	// Events returns the process's events in seq order: any number of
	// BackendOutput events, at most one BackendExited, then BackendClosed.
	// BackendFailed (a transport failure, or a failure in a read) ends the
	// stream in place of BackendClosed. The channel is closed after the last
	// event; a channel closed without BackendClosed or BackendFailed is
	// treated as closed. Events emitted before the call must be replayed
	// (docs/client.md §3.2), and the sender must not drop events: the tools drain the
	// channel promptly.
	Events() <-chan BackendEvent

	// Write sends process/write {processId, chunk, writeId} and returns the
	// server's status (wire.WriteAccepted, wire.WriteUnknownProcess,
	// wire.WriteStdinClosed or wire.WriteStarting). writeID is a
	// per-process counter ("1", "2", …) chosen by the tools so that a retry
	// after a reconnect stays idempotent. A non-nil error means a transport
	// failure: the tools then terminate and release the process.
	Write(ctx context.Context, chunk []byte, writeID string) (status string, err error)

	// Terminate sends process/terminate. The tools call it fire-and-forget
	// (on pruning, TerminateAll, and as cleanup after an exit); errors are
	// ignored.
	Terminate(ctx context.Context) error

	// Close releases the handle's routing (unregisters the processId) once
	// the tools are done with it. It must not kill the process, must be safe
	// to call more than once, and must stop (and close) Events without
	// blocking: the tools may have stopped reading the channel.
	Close()
}

// BackendEventKind says what a BackendEvent carries.
type BackendEventKind int

// Kinds of BackendEvent.
const (
	// BackendOutput carries a chunk of stdout, stderr or pty output.
	BackendOutput BackendEventKind = iota + 1
	// BackendExited carries the exit code and the sandbox-denial flag.
	BackendExited
	// BackendClosed says that all output was delivered (process/closed).
	BackendClosed
	// BackendFailed carries a failure message, for example
	// "exec-server transport disconnected: …". It is terminal.
	BackendFailed
)

// BackendEvent is one event of a ProcessHandle, mirroring process/output,
// process/exited, process/closed and read failures.
type BackendEvent struct {
	Kind BackendEventKind
	// Seq is the server's sequence number (informational).
	Seq uint64
	// Stream is "stdout", "stderr" or "pty" (BackendOutput).
	Stream string
	// Data is the output bytes (BackendOutput).
	Data []byte
	// ExitCode is the exit code (BackendExited).
	ExitCode int
	// SandboxDenied is the server's denial verdict (BackendExited).
	SandboxDenied bool
	// Message is the failure text (BackendFailed).
	Message string
}

// StartRequest is a resolved process/start request (docs/client.md §5.1). The tools fill
// every member; an adapter copies them onto wire.StartParams (see Params).
type StartRequest struct {
	// ProcessID is "<n>-<uuid v4>"; the model sees only n.
	ProcessID string
	// Argv is [shell, "-lc"|"-c", cmd] for POSIX shells (docs/client.md §4.3).
	Argv []string
	// Cwd is the absolute working directory.
	Cwd string
	// Env holds only the variables that differ from the server-side base
	// environment; EnvPolicy says how the rest is inherited (docs/client.md §5.1),
	// nil meaning the default of every entry point, ServerEnv (docs/client.md §3.6).
	Env       map[string]string
	EnvPolicy *wire.EnvPolicy
	// TTY asks for a PTY with writable stdin. Without it the process has no
	// stdin at all (pipeStdin is always false for unified exec).
	TTY bool
	// Arg0 overrides argv[0] when non-nil.
	Arg0 *string
	// Sandbox is the caller's resolved sandbox object, or nil.
	Sandbox json.RawMessage
	// ThreadID and ToolCallID go into process/start metadata.
	ThreadID   string
	ToolCallID string
}

// startMetadata is the metadata object of process/start.
type startMetadata struct {
	ThreadID   string `json:"threadId"`
	ToolCallID string `json:"toolCallId"`
}

// Params returns the process/start params for r.
func (r StartRequest) Params() wire.StartParams {
	meta, _ := json.Marshal(startMetadata{ThreadID: r.ThreadID, ToolCallID: r.ToolCallID})
	env, policy := r.Env, r.EnvPolicy
	if env == nil {
		env = map[string]string{}
	}
	if policy == nil {
		policy = unifiedexec.ServerEnv()
	}
	return wire.StartParams{
		ProcessID: r.ProcessID,
		Argv:      r.Argv,
		Cwd:       wire.Path{Native: r.Cwd},
		Env:       env,
		TTY:       r.TTY,
		Arg0:      r.Arg0,
		EnvPolicy: policy,
		Sandbox:   r.Sandbox,
		Metadata:  meta,
	}
}
