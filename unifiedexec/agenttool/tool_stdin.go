package agenttool

import (
	"context"
	"strconv"

	"github.com/codexec/codex/wire"
)

// WriteStdinCall is one write_stdin invocation.
type WriteStdinCall struct {
	// Params is the model's arguments.
	Params WriteStdinParams
}

// WriteStdin runs write_stdin (docs/client.md §5.3): it writes chars (if any) to the
// session's PTY, collects output for the yield window and reports the
// state. Its EventCallID is the call id of the original exec_command, and
// it emits one TerminalInteraction. Errors are *UnknownProcessIDError,
// ErrSessionStdinClosed, ErrWriteToStdin, *ProcessFailedError, a transport
// error from the backend, or ErrUnavailable; render them with
// WriteStdinFailedMessage.
func (t *Tools) WriteStdin(ctx context.Context, call WriteStdinCall) (*ExecCommandOutput, error) {
	if t.cfg.Backend == nil {
		return nil, ErrUnavailable
	}
	prm := call.Params
	id := int(prm.SessionID)
	start := t.clock.Now()
	e, ok := t.store.lookup(id, start)
	if !ok {
		return nil, &UnknownProcessIDError{ID: id}
	}
	p := e.proc
	if prm.Chars != "" {
		if !e.tty {
			return nil, ErrSessionStdinClosed
		}
		status, err := p.h.Write(ctx, []byte(prm.Chars), t.store.nextWriteID(e))
		if err != nil {
			p.terminate(context.WithoutCancel(ctx))
			t.release(id, p)
			return nil, err
		}
		switch status {
		case wire.WriteAccepted:
		case wire.WriteUnknownProcess, wire.WriteStdinClosed:
			p.markExited(nil, false)
			return nil, ErrWriteToStdin
		default:
			return nil, ErrWriteToStdin
		}
		clockSleep(t.clock, PostWriteSettle, ctx.Done())
	}
	yield := WriteYield(prm.YieldTimeMs, prm.Chars == "", t.cfg.MaxBackgroundTerminalTimeout)
	raw := p.collect(ctx, t.clock.Now().Add(yield))

	exited, code, _, failure := p.state()
	if failure != "" {
		t.release(id, p)
		return nil, &ProcessFailedError{Message: failure}
	}
	if !t.store.contains(e) {
		return nil, &UnknownProcessIDError{ID: id}
	}
	out := t.output(start, e.call, raw, maxOutputTokens(prm.MaxOutputTokens))
	out.ExitCode = code
	if exited {
		t.release(id, p)
	} else {
		out.SessionID = &id
	}
	t.emit(&TerminalInteractionEvent{CallID: e.call.callID, ProcessID: strconv.Itoa(id), Stdin: prm.Chars})
	return out, nil
}

// TerminateAll drains the store, clears the reserved ids and terminates
// every process (docs/client.md §9). It is for session shutdown and an explicit "clean
// background terminals" request; each process still gets its End event.
func (t *Tools) TerminateAll(ctx context.Context) {
	for _, e := range t.store.drain() {
		e.proc.terminate(ctx)
		t.release(e.id, e.proc)
	}
}

// Len returns the number of stored (running or not yet reaped) processes.
func (t *Tools) Len() int { return t.store.len() }

// Close terminates every process and waits for all goroutines Tools
// started. Calls after Close fail or find no sessions.
func (t *Tools) Close() {
	t.TerminateAll(context.WithoutCancel(t.ctx))
	t.cancel()
	t.wg.Wait()
}
