package cli

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

// The defaults of --max-sessions and --max-connections (docs/operations.md
// §1, §11). They are backstops, not capacity plans: far above what one
// workspace needs (the Codex CLI holds one connection and one session, and
// a resume replaces the connection) and above what our benchmark makes
// within one session TTL, yet low enough that a client stuck in a
// reconnect loop, which leaves a detached session behind every time, is
// refused with a clear error before the server runs out of file
// descriptors or memory. An idle connection costs one descriptor and a few
// goroutines, an idle session its bookkeeping; measured in
// docs/operations.md §11. Operators of shared servers set both from their
// node's capacity; 0 turns a limit off.
const (
	defaultMaxSessions    = 1024
	defaultMaxConnections = 1024
)

// fleetFlags are the flags of the session and connection limits.
var fleetFlags = []cli.Flag{
	&cli.IntFlag{Name: "max-sessions", Value: defaultMaxSessions, Usage: "`N` sessions held at once, attached or detached; initialize refuses a new one beyond it (-32011), a resume is never refused; 0: no limit"},
	&cli.IntFlag{Name: "max-connections", Value: defaultMaxConnections, Usage: "`N` WebSocket connections open at once; an upgrade beyond it is refused with 503; 0: no limit"},
}

// fleetLimits reads --max-sessions and --max-connections.
func fleetLimits(c *cli.Context) (sessions, conns int, err error) {
	sessions, conns = c.Int("max-sessions"), c.Int("max-connections")
	if sessions < 0 || conns < 0 {
		return 0, 0, fmt.Errorf("--max-sessions and --max-connections must not be negative")
	}
	return sessions, conns, nil
}
