package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// heapAlloc forces a GC in the server through its hidden pprof listener and
// returns HeapAlloc.
func heapAlloc(t *testing.T, addr string) int64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/debug/pprof/heap?gc=1&debug=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "# HeapAlloc = "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no HeapAlloc in the heap profile")
	return 0
}

// heapGrowth samples the server's heap for 3 s, every 250 ms, and returns
// the most it grew above base, stopping early once that passed limit.
func heapGrowth(t *testing.T, addr string, base, limit int64) int64 {
	t.Helper()
	var grown int64
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		grown = max(grown, heapAlloc(t, addr)-base)
		if grown > limit {
			break
		}
	}
	return grown
}

// TestConnectStartDropCyclesFreeMemory runs connect → process/start → drop
// cycles against a server with --session-ttl 0: once the sessions are
// killed, nothing of them may stay on the heap (it used to keep every
// process and its session for --exited-retention, ~5-7 KB a cycle), neither
// the processes running at the drop nor those that finished before.
func TestConnectStartDropCyclesFreeMemory(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := startServer(t, "--session-ttl", "0", "--debug-pprof", addr, "--log-level", "info")
	cycle := func(i int) {
		c := dial(t, s.URL, nil)
		c.handshake()
		// One process that finished before the drop, one still running.
		done := fmt.Sprintf("cyc-true-%d", i)
		c.ok("process/start", startParams(done, "true"), nil)
		c.events(done, 10*time.Second)
		c.ok("process/start", startParams(fmt.Sprintf("cyc-%d", i), "sleep", "60"), nil)
		c.close()
	}
	for i := range 20 {
		cycle(i)
	}
	assertNoChildren(t, s) // the warm-up sessions are dead
	base := heapAlloc(t, addr)
	const n = 300
	for i := range n {
		cycle(100 + i)
	}
	// The kills run after each drop; wait for them, bounded.
	deadline := time.Now().Add(15 * time.Second)
	var grown int64
	for {
		grown = heapAlloc(t, addr) - base
		if grown < 512<<10 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if grown >= 512<<10 {
		t.Fatalf("heap grew by %d bytes after %d connect/start/drop cycles (%d per cycle)", grown, n, grown/n)
	}
	assertNoChildren(t, s)
}
