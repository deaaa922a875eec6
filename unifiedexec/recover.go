package unifiedexec

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wire"
)

// resume runs the recover-with-resume loop of docs/client.md §11 on the
// monitor goroutine: reconnect, initialize {resumeSessionId}, and catch up
// every live process, pacing attempts by 100 ms until deadline has passed.
// Notifications of the new connection are routed from the moment it is
// opened; the ordered delivery merges them with the catch-up reads.
func (c *Client) resume(ctx context.Context, dial func(context.Context) (*rpc.Conn, error), reason string, deadline time.Duration) (*rpc.Conn, error) {
	lost := transportError(reason)
	sid := c.SessionID()
	if sid == "" {
		return nil, lost
	}
	dctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	for attempt := 1; ; attempt++ {
		conn, err := dial(dctx)
		if err == nil {
			if err = c.handshake(dctx, conn, sid); err == nil {
				if err = c.catchUp(dctx, conn); err == nil {
					c.log.Info("exec-server session resumed", "session", sid, "attempt", attempt)
					return conn, nil
				}
			}
			conn.Close()
			conn.Wait()
			if !retryable(err) {
				return nil, fmt.Errorf("%w; failed to resume exec-server session: %v", lost, err)
			}
		}
		c.log.Debug("resume attempt failed", "attempt", attempt, "error", err)
		t := time.NewTimer(recoveryPacing)
		select {
		case <-t.C:
		case <-dctx.Done():
			t.Stop()
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if dctx.Err() != nil {
			return nil, fmt.Errorf("%w; recovery timed out after %s", lost, deadline)
		}
	}
}

// retryable reports whether a failed resume attempt may be repeated: only
// an unknown session (wire.ErrUnknownSession, set by handshake) is terminal.
func retryable(err error) bool { return !wire.IsUnknownSession(err) }

// catchUp reads every live process from its last published seq on conn and
// merges the result into its ordered event stream.
func (c *Client) catchUp(ctx context.Context, conn *rpc.Conn) error {
	c.mu.Lock()
	procs := make([]*Process, 0, len(c.procs))
	for _, p := range c.procs {
		procs = append(procs, p)
	}
	c.mu.Unlock()
	for _, p := range procs {
		last := p.lastSeq()
		zero := uint64(0)
		var res wire.ReadResult
		err := conn.Call(ctx, wire.MethodProcessRead, wire.ReadParams{ProcessID: p.id, AfterSeq: &last, WaitMs: &zero}, &res)
		var we *rpc.Error
		if errors.As(err, &we) {
			p.failWith(fmt.Errorf("%w: process/read while recovering: %v", ErrTransport, err))
			continue
		}
		if err != nil {
			return err
		}
		evs, gapErr := recoveredEvents(last, res)
		if gapErr != nil {
			_ = conn.Call(ctx, wire.MethodProcessTerminate, wire.TerminateParams{ProcessID: p.id}, nil)
			p.failWith(gapErr)
			continue
		}
		p.deliver(evs)
	}
	return nil
}

// recoveredEvents turns a catch-up read after seq last into events
// (docs/client.md §11 step 3.3). A missing seq is allowed only for the exit
// event, which is synthesised; any other gap is an error.
func recoveredEvents(last uint64, res wire.ReadResult) ([]Event, error) {
	if res.Failure != nil {
		return nil, fmt.Errorf("%w: %s", ErrTransport, *res.Failure)
	}
	var evs []Event
	seen := map[uint64]bool{}
	for _, ch := range res.Chunks {
		if ch.Seq > last {
			evs = append(evs, Event{Seq: ch.Seq, Kind: EventOutput, Stream: ch.Stream, Data: ch.Chunk})
			seen[ch.Seq] = true
		}
	}
	top := uint64(0)
	if res.NextSeq > 0 {
		top = res.NextSeq - 1
	}
	if res.Closed && top > last {
		evs = append(evs, Event{Seq: top, Kind: EventClosed})
		seen[top] = true
	}
	var missing []uint64
	for s := last + 1; s <= top; s++ {
		if !seen[s] {
			missing = append(missing, s)
		}
	}
	switch {
	case len(missing) == 0:
	case len(missing) == 1 && res.Exited && res.ExitCode != nil:
		evs = append(evs, Event{Seq: missing[0], Kind: EventExited, ExitCode: *res.ExitCode, SandboxDenied: res.SandboxDenied})
	default:
		return nil, fmt.Errorf("%w: process events are no longer retained while recovering through sequence %d", ErrTransport, top)
	}
	return evs, nil
}
