package e2e

import (
	"fmt"
	"testing"
)

// TestBurstTailComplete: a 1 MiB burst then exit delivers every byte before
// process/closed, 20 times in a PTY and 4 times with pipes by default (45 s
// of the race-built server's time for the 100 and 20, which
// CODEX_E2E_LOOPS=100 runs).
func TestBurstTailComplete(t *testing.T) {
	if testing.Short() {
		t.Skip("long reliability run")
	}
	t.Parallel()
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()
	for _, mode := range []struct {
		tty  bool
		runs int
	}{{true, e2eLoops(t, 20)}, {false, max(e2eLoops(t, 20)/5, 1)}} {
		for i := 0; i < mode.runs; i++ {
			id := fmt.Sprintf("burst-%v-%d", mode.tty, i)
			p := startParams(id, "/usr/bin/head", "-c", "1048576", "/dev/zero")
			p["tty"] = mode.tty
			out, code := c.run(id, p)
			if code != 0 || len(out) != 1<<20 {
				t.Fatalf("%s: %d bytes, exit %d", id, len(out), code)
			}
			c.mu.Lock()
			c.notifs = c.notifs[:0] // keep memory flat across runs
			c.mu.Unlock()
		}
	}
}
