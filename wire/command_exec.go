package wire

import (
	"strconv"

	"github.com/codexec/codex/rpc"
)

// The command/exec family (docs/protocol.md §12), served on the exec-server
// connection after the handshake.
const (
	MethodCommandExec          = "command/exec"
	MethodCommandExecWrite     = "command/exec/write"
	MethodCommandExecResize    = "command/exec/resize"
	MethodCommandExecTerminate = "command/exec/terminate"
	MethodCommandExecOutput    = "command/exec/outputDelta"
)

// Defaults of command/exec (docs/protocol.md §12.1).
const (
	CommandExecDefaultCap       = 1 << 20
	CommandExecDefaultTimeoutMs = 10_000
	CommandExecTimeoutExitCode  = 124
)

// Capabilities are the client capabilities of initialize.
type Capabilities struct {
	ExperimentalAPI bool `json:"experimentalApi"`
}

// TermSize is a PTY size in rows and columns.
type TermSize struct {
	Rows uint16 `json:"rows"`
	Cols uint16 `json:"cols"`
}

// CommandExecParams are the params of command/exec. They are decoded by
// DecodeCommandExecParams (the official server's member order and texts);
// the rpc tags only mark required members for the JSON Schema. Nil pointers are absent
// (or null) members. Env maps a name to its value, or to nil to unset it.
type CommandExecParams struct {
	Command            []string           `json:"command" rpc:"required"`
	ProcessID          *string            `json:"processId,omitempty" schema:"nullable"`
	TTY                bool               `json:"tty,omitempty"`
	StreamStdin        bool               `json:"streamStdin,omitempty"`
	StreamStdoutStderr bool               `json:"streamStdoutStderr,omitempty"`
	OutputBytesCap     *uint64            `json:"outputBytesCap,omitempty" schema:"nullable"`
	DisableOutputCap   bool               `json:"disableOutputCap,omitempty"`
	TimeoutMs          *int64             `json:"timeoutMs,omitempty" schema:"nullable"`
	DisableTimeout     bool               `json:"disableTimeout,omitempty"`
	Cwd                *string            `json:"cwd,omitempty" schema:"nullable"`
	Env                map[string]*string `json:"env,omitempty" schema:"nullable"`
	Size               *TermSize          `json:"size,omitempty" schema:"nullable"`
	SandboxPolicy      map[string]any     `json:"sandboxPolicy,omitempty" schema:"nullable"`
	PermissionProfile  *string            `json:"permissionProfile,omitempty" schema:"nullable"`
}

// CommandExecResult is the response of command/exec. Streamed streams are "".
type CommandExecResult struct {
	ExitCode int    `json:"exitCode"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
}

// CommandExecOutputDelta are the params of command/exec/outputDelta.
// DeltaBase64 carries raw bytes; PTY output is reported as stdout.
type CommandExecOutputDelta struct {
	ProcessID   string `json:"processId"`
	Stream      string `json:"stream"`
	DeltaBase64 string `json:"deltaBase64"`
	CapReached  bool   `json:"capReached"`
}

// CommandExecWriteParams are the params of command/exec/write.
type CommandExecWriteParams struct {
	ProcessID   string  `json:"processId" rpc:"required"`
	DeltaBase64 *string `json:"deltaBase64,omitempty" schema:"nullable"`
	CloseStdin  bool    `json:"closeStdin,omitempty"`
}

// CommandExecResizeParams are the params of command/exec/resize.
type CommandExecResizeParams struct {
	ProcessID string   `json:"processId" rpc:"required"`
	Size      TermSize `json:"size" rpc:"required"`
}

// CommandExecTerminateParams are the params of command/exec/terminate.
type CommandExecTerminateParams struct {
	ProcessID string `json:"processId" rpc:"required"`
}

// ErrInvalidRequestDecode wraps a params decoding message (docs/protocol.md §12.1).
func ErrInvalidRequestDecode(msg string) *rpc.Error {
	return rpc.Errorf(rpc.CodeInvalidRequest, "Invalid request: %s", msg)
}

// ErrNoActiveCommandExec is the answer for an unknown command/exec id.
func ErrNoActiveCommandExec(id string) *rpc.Error {
	return rpc.Errorf(rpc.CodeInvalidRequest, "no active command/exec for process id %s", strconv.Quote(id))
}

// ErrCommandExecNotRunning is the answer for a control request that came
// while the command's output was draining after its exit.
func ErrCommandExecNotRunning(id string) *rpc.Error {
	return rpc.Errorf(rpc.CodeInvalidRequest, "command/exec %s is no longer running", strconv.Quote(id))
}

// ErrDuplicateCommandExec is the answer for a processId already running.
func ErrDuplicateCommandExec(id string) *rpc.Error {
	return rpc.Errorf(rpc.CodeInvalidRequest, "duplicate active command/exec process id: %s", strconv.Quote(id))
}

// ErrCommandExecSize is the answer for a zero PTY dimension.
func ErrCommandExecSize() *rpc.Error {
	return rpc.Errorf(rpc.CodeInvalidParams, "command/exec size rows and cols must be greater than 0")
}

// ErrCommandExecSpawn is the answer for a command that could not start.
func ErrCommandExecSpawn(detail string) *rpc.Error {
	return rpc.Errorf(rpc.CodeInternalError, "failed to spawn command: %s", detail)
}

// ValidateCommandExec applies the checks 1 to 8 of docs/protocol.md §12.2 that need no state,
// in their order; experimental is the connection's experimentalApi
// capability. Checks 7 (sandbox) and later are the server's.
func ValidateCommandExec(p *CommandExecParams, experimental bool) *rpc.Error {
	if p.PermissionProfile != nil && !experimental {
		return rpc.Errorf(rpc.CodeInvalidRequest, "command/exec.permissionProfile requires experimentalApi capability")
	}
	if len(p.Command) == 0 {
		return rpc.Errorf(rpc.CodeInvalidRequest, "command must not be empty")
	}
	if p.SandboxPolicy != nil && p.PermissionProfile != nil {
		return rpc.Errorf(rpc.CodeInvalidRequest, "`permissionProfile` cannot be combined with `sandboxPolicy`")
	}
	if p.Size != nil && !p.TTY {
		return rpc.Errorf(rpc.CodeInvalidParams, "command/exec size requires tty: true")
	}
	if p.DisableOutputCap && p.OutputBytesCap != nil {
		return rpc.Errorf(rpc.CodeInvalidParams, "command/exec cannot set both outputBytesCap and disableOutputCap")
	}
	if p.DisableTimeout && p.TimeoutMs != nil {
		return rpc.Errorf(rpc.CodeInvalidParams, "command/exec cannot set both timeoutMs and disableTimeout")
	}
	if p.TimeoutMs != nil && *p.TimeoutMs < 0 {
		return rpc.Errorf(rpc.CodeInvalidParams, "command/exec timeoutMs must be non-negative, got %d", *p.TimeoutMs)
	}
	return nil
}

// ValidateCommandExecSize is check 8 of docs/protocol.md §12.2, after the sandbox checks.
func ValidateCommandExecSize(p *CommandExecParams) *rpc.Error {
	if p.Size != nil && (p.Size.Rows == 0 || p.Size.Cols == 0) {
		return ErrCommandExecSize()
	}
	return nil
}
