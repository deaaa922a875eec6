package unifiedexec

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wire"
)

// closeKillTimeout bounds the session/end or process/terminate calls of
// Close.
const closeKillTimeout = 2 * time.Second

// ErrSessionEndUnsupported is EndSession's error when the server does not
// serve session/end (it answered -32601, as the reference does). It
// matches errors.ErrUnsupported.
var ErrSessionEndUnsupported = fmt.Errorf("session/end: %w", errors.ErrUnsupported)

// EndSession ends the client's session with session/end [ext]
// (docs/protocol.md §10.5): the server kills every process of the
// session, with everything they started, including what finished
// commands left running in the background (`server &`), and answers once
// they are dead. Their exited and closed notifications still arrive. The
// session cannot be resumed afterwards, and process/start on this client
// fails; the filesystem methods still work. Against a server without the
// method it returns ErrSessionEndUnsupported and nothing is killed. It is
// not replayed.
func (c *Client) EndSession(ctx context.Context) error {
	err := c.call(ctx, wire.MethodSessionEnd, nil, nil, false)
	if isMethodNotFound(err) {
		return ErrSessionEndUnsupported
	}
	return err
}

// isMethodNotFound reports whether err is the server's -32601.
func isMethodNotFound(err error) bool {
	var re *rpc.Error
	return errors.As(err, &re) && re.Code == rpc.CodeMethodNotFound
}

// endOrKill ends the session over conn (session/end); where that fails,
// for instance on a server without the method, it force-kills procs
// instead (killAll). Each step is bounded by closeKillTimeout.
func endOrKill(conn *rpc.Conn, procs []*Process) {
	ctx, cancel := context.WithTimeout(context.Background(), closeKillTimeout)
	err := conn.Call(ctx, wire.MethodSessionEnd, nil, nil)
	cancel()
	if err != nil {
		killAll(conn, procs)
	}
}

// killAll force-kills procs over conn (process/terminate without a mode),
// all at once, and returns when every call is answered or after
// closeKillTimeout. Failures are ignored: the process may be gone already.
func killAll(conn *rpc.Conn, procs []*Process) {
	if len(procs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), closeKillTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var res wire.TerminateResult
			_ = conn.Call(ctx, wire.MethodProcessTerminate, wire.TerminateParams{ProcessID: p.id}, &res)
		}()
	}
	wg.Wait()
}
