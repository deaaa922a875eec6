package unifiedexec

import (
	"context"
	"sync"
	"time"

	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wire"
)

// closeKillTimeout bounds the process/terminate calls of Close.
const closeKillTimeout = 2 * time.Second

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
