package unifiedexec

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/codexec/codex/wire"
)

// NoTimeout as CommandExecRequest.Timeout lets the command run until it
// ends (disableTimeout on the wire).
const NoTimeout time.Duration = -1

// NoOutputBytesCap, as the OutputBytesCap of StartOptions, RunOptions or
// CommandExecRequest, keeps every byte (disableOutputCap on the wire).
const NoOutputBytesCap = -1

// CommandExecRequest describes one command/exec run (docs/protocol.md §12):
// one argv, run by the server in its sandbox, answered once it has ended.
// Only Argv is required; every other field has a usable zero value.
type CommandExecRequest struct {
	// Argv is the command. An empty Argv is sent as it is: the server
	// answers it with its own error.
	Argv []string
	// Cwd is the working directory; empty means the server's, and a
	// relative path is joined onto the server's.
	Cwd string
	// Env is laid over the server's environment, and the names in Unset
	// are then removed from it (PATH included). A name may not be in both.
	Env   map[string]string
	Unset []string
	// Timeout kills the command (SIGKILL) when it elapses and the result
	// has exit code 124 with the output read so far. Zero means the
	// server's default (10 s), NoTimeout none; other values are sent in
	// whole milliseconds, rounded up.
	Timeout time.Duration
	// OutputBytesCap keeps at most so many bytes of each stream; the rest is
	// read and dropped (the command is not stopped). Zero means the
	// server's default (1 MiB), NoOutputBytesCap none.
	OutputBytesCap int64
	// PermissionProfile names a permission profile: ":read-only",
	// ":workspace", ":danger-full-access" or one of the server's
	// configuration. SandboxPolicy is a legacy sandbox policy object
	// ({"type":"readOnly"}, {"type":"workspaceWrite", …}). At most one of
	// the two may be set; with neither the server's default permissions
	// apply.
	PermissionProfile string
	SandboxPolicy     map[string]any

	// ProcessID names the command on this connection, for the handle's
	// follow-up calls; empty means a generated id. It must not be the id
	// of another command of this Client that is still running.
	ProcessID string
	// TTY runs the command on a PTY of Size (default 24×80), which implies
	// StreamStdin and StreamOutput; the PTY's output is reported as
	// "stdout".
	TTY  bool
	Size *wire.Size
	// StreamStdin lets CommandExecHandle.Write feed the command's stdin;
	// without it (and without TTY) stdin is /dev/null.
	StreamStdin bool
	// StreamOutput delivers output to OnOutput as it comes; the streamed
	// streams are then "" in the result.
	StreamOutput bool
	// OnOutput receives the streamed output in order, on a goroutine of
	// the handle, and before Wait returns the result. Nil discards it.
	OnOutput func(CommandExecOutput)
}

// CommandExecOutput is one command/exec/outputDelta: Data are raw bytes of
// Stream ("stdout" or "stderr"); CapReached marks the last delta of a
// stream whose kept bytes reached the output cap.
type CommandExecOutput struct {
	Stream     string
	Data       []byte
	CapReached bool
}

// CommandExecResult is the answer of command/exec: the exit code (128+N
// after signal N, 124 after the timeout) and the buffered output, decoded
// as UTF-8 ("" for a streamed stream).
type CommandExecResult = wire.CommandExecResult

// CommandExec runs one command with command/exec and returns its result
// once it has ended and every streamed delta has been given to OnOutput.
// When ctx ends first, the command is terminated and ctx's error returned.
// Errors answered by the server (validation, spawn failures) are
// *WireError with the server's code and message. The command is not
// resumed after a lost connection: the error then matches
// ErrCommandExecLost (and ErrTransport).
func (c *Client) CommandExec(ctx context.Context, req CommandExecRequest) (CommandExecResult, error) {
	h, err := c.StartCommandExec(ctx, req)
	if err != nil {
		return CommandExecResult{}, err
	}
	res, err := h.Wait(ctx)
	if err != nil && ctx.Err() != nil {
		h.stop()
	}
	return res, err
}

// params builds the wire params of r with processId id.
func (r *CommandExecRequest) params(id string) (wire.CommandExecParams, error) {
	p := wire.CommandExecParams{
		Command: r.Argv, ProcessID: &id, TTY: r.TTY, StreamStdin: r.StreamStdin,
		StreamStdoutStderr: r.StreamOutput, Size: termSize(r.Size), SandboxPolicy: r.SandboxPolicy,
	}
	if p.Command == nil {
		p.Command = []string{}
	}
	if r.Cwd != "" {
		p.Cwd = &r.Cwd
	}
	if r.PermissionProfile != "" {
		p.PermissionProfile = &r.PermissionProfile
	}
	switch {
	case r.Timeout == NoTimeout:
		p.DisableTimeout = true
	case r.Timeout < 0:
		return p, fmt.Errorf("timeout %s is negative", r.Timeout)
	case r.Timeout > 0:
		ms := int64(math.Ceil(float64(r.Timeout) / float64(time.Millisecond)))
		p.TimeoutMs = &ms
	}
	switch {
	case r.OutputBytesCap == NoOutputBytesCap:
		p.DisableOutputCap = true
	case r.OutputBytesCap < 0:
		return p, fmt.Errorf("output cap %d is negative", r.OutputBytesCap)
	case r.OutputBytesCap > 0:
		n := uint64(r.OutputBytesCap)
		p.OutputBytesCap = &n
	}
	if len(r.Env) > 0 || len(r.Unset) > 0 {
		p.Env = make(map[string]*string, len(r.Env)+len(r.Unset))
		for k, v := range r.Env {
			p.Env[k] = &v
		}
		for _, k := range r.Unset {
			if _, both := r.Env[k]; both {
				return p, fmt.Errorf("environment variable %q is both set and unset", k)
			}
			p.Env[k] = nil
		}
	}
	return p, nil
}

// termSize is size in the command/exec spelling of the same two members.
func termSize(size *wire.Size) *wire.TermSize {
	if size == nil {
		return nil
	}
	return &wire.TermSize{Rows: size.Rows, Cols: size.Cols}
}
