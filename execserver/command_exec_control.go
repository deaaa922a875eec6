package execserver

import (
	"context"
	"errors"

	"github.com/codexec/codex/proc"
	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wire"
)

// veof is the PTY's end-of-file character (^D): closeStdin on a PTY sends a
// newline then VEOF, so the child reads one empty line, then EOF.
const veof = 0x04

// activeCommand finds id for a control request. A command that exited but
// is still draining answers "is no longer running" once its own response
// went out, so that error is parked (rpc.ErrAsync).
func (h *connHandler) activeCommand(req *rpc.Request, id string) (*cmdExec, error) {
	e := h.cmds.lookup(id)
	if e == nil {
		return nil, wire.ErrNoActiveCommandExec(id)
	}
	select {
	case <-e.exited:
	default:
		return e, nil
	}
	h.c.Go(func(ctx context.Context) {
		select {
		case <-e.answered:
			_ = h.c.Respond(req.ID, nil, wire.ErrCommandExecNotRunning(id))
		case <-ctx.Done():
		}
	})
	return nil, rpc.ErrAsync
}

func commandExecWrite(_ context.Context, h *connHandler, req *rpc.Request) (any, error) {
	p, derr := wire.DecodeCommandExecWrite(req.Params)
	if derr != nil {
		return nil, derr
	}
	if err := h.check("command/exec"); err != nil {
		return nil, err
	}
	if p.DeltaBase64 == nil && !p.CloseStdin {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "command/exec/write requires deltaBase64 or closeStdin")
	}
	var data []byte
	if p.DeltaBase64 != nil {
		var err *rpc.Error
		if data, err = decodeDelta(*p.DeltaBase64); err != nil {
			return nil, err
		}
	}
	e, err := h.activeCommand(req, p.ProcessID)
	if err != nil {
		return nil, err
	}
	if !e.streamStdin {
		return nil, rpc.Errorf(rpc.CodeInvalidRequest, "stdin streaming is not enabled for this command/exec")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stdinClosed {
		if len(data) > 0 {
			return nil, rpc.Errorf(rpc.CodeInvalidRequest, "stdin is already closed")
		}
		return struct{}{}, nil
	}
	if p.CloseStdin && e.tty {
		data = append(data, '\n', veof)
	}
	parked := false
	if len(data) > 0 {
		// A full stdin queue parks the answer, not the connection.
		cost := parkCost(len(data))
		queued, err := e.pr.WriteAsync(data, func() bool { return h.stdin.reserve(cost) }, func(error) {
			h.stdin.release(cost)
			h.stdin.answerCommandExec(req.ID)
		})
		switch {
		case errors.Is(err, proc.ErrQueueFull):
			return nil, rpc.Errorf(rpc.CodeInternalError, "stdin queue of command/exec %q is full", p.ProcessID)
		case err != nil && !errors.Is(err, proc.ErrStdinClosed):
			return nil, wire.OSError(rpc.CodeInternalError, err)
		}
		parked = err == nil && !queued
	}
	if p.CloseStdin {
		e.stdinClosed = true
		if !e.tty {
			_ = e.pr.CloseStdin() // after a parked chunk: the queue keeps order
		}
	}
	if parked {
		return nil, rpc.ErrAsync
	}
	return struct{}{}, nil
}

func commandExecResize(_ context.Context, h *connHandler, req *rpc.Request) (any, error) {
	p, derr := wire.DecodeCommandExecResize(req.Params)
	if derr != nil {
		return nil, derr
	}
	if err := h.check("command/exec"); err != nil {
		return nil, err
	}
	if p.Size.Rows == 0 || p.Size.Cols == 0 {
		return nil, wire.ErrCommandExecSize()
	}
	e, err := h.activeCommand(req, p.ProcessID)
	if err != nil {
		return nil, err
	}
	if !e.tty {
		return nil, rpc.Errorf(rpc.CodeInvalidRequest, "failed to resize PTY: process is not attached to a PTY")
	}
	if err := e.pr.Resize(p.Size.Rows, p.Size.Cols); err != nil {
		return nil, rpc.Errorf(rpc.CodeInvalidRequest, "failed to resize PTY: %v", err)
	}
	return struct{}{}, nil
}

func commandExecTerminate(_ context.Context, h *connHandler, req *rpc.Request) (any, error) {
	p, derr := wire.DecodeCommandExecTerminate(req.Params)
	if derr != nil {
		return nil, derr
	}
	if err := h.check("command/exec"); err != nil {
		return nil, err
	}
	e, err := h.activeCommand(req, p.ProcessID)
	if err != nil {
		return nil, err
	}
	// Answer first: the command's own response, which the kill causes,
	// then comes after this one.
	if err := h.c.Respond(req.ID, struct{}{}, nil); err != nil {
		return nil, err
	}
	e.termOnce.Do(func() { close(e.terminated) })
	return nil, rpc.ErrAsync
}
