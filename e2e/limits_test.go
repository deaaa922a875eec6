package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// logDir returns the "dir" field of the first server log line containing
// msg, or "".
func logDir(s *server, msg string) string {
	for _, line := range strings.Split(s.stderr.String(), "\n") {
		if i := strings.Index(line, `"dir": "`); i >= 0 && strings.Contains(line, msg) {
			d, _, _ := strings.Cut(line[i+len(`"dir": "`):], `"`)
			return d
		}
	}
	return ""
}

// pidsLeaves returns the leaf directories that carry pids.max: the cgroup
// v1 pids fallback's leaves, or else the v2 leaves. Besides the leaves of
// running processes there may be the spare leaf, made ahead for the next
// process with the same limits.
func pidsLeaves(s *server) []string {
	dirs := []string{logDir(s, "pids limit through cgroup v1"), logDir(s, "cgroup mode")}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		matches, _ := filepath.Glob(filepath.Join(d, "*", "pids.max"))
		if len(matches) > 0 {
			var leaves []string
			for _, m := range matches {
				leaves = append(leaves, filepath.Dir(m))
			}
			return leaves
		}
	}
	return nil
}

// busyPidsLeaves returns the leaves of pidsLeaves that hold tasks: the
// leaves of running processes, not the spare.
func busyPidsLeaves(s *server) []string {
	var busy []string
	for _, leaf := range pidsLeaves(s) {
		if n, _ := strconv.Atoi(readTrim(filepath.Join(leaf, "pids.current"))); n > 0 {
			busy = append(busy, leaf)
		}
	}
	return busy
}

func readTrim(path string) string {
	b, _ := os.ReadFile(path)
	return strings.TrimSpace(string(b))
}

// eventsMax returns the "max" count of pids.events (forks refused).
func eventsMax(leaf string) int {
	for _, line := range strings.Split(readTrim(filepath.Join(leaf, "pids.events")), "\n") {
		if v, ok := strings.CutPrefix(line, "max "); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return 0
}

// A fork bomb inside one command stays inside its pids limit, another
// connection is served promptly meanwhile, and terminate removes it all.
func TestForkBombContained(t *testing.T) {
	const limit = 64
	s := startServer(t, "--max-pids-per-process", strconv.Itoa(limit), "--session-ttl", "0")
	if logDir(s, "cgroup mode") == "" {
		t.Skip("the server does not use cgroup mode here")
	}
	c := dial(t, s.URL, nil)
	c.handshake()

	// Before any bomb: the process's leaf carries the limit.
	c.ok("process/start", startParams("probe", "/bin/sleep", "30"), nil)
	leaves := busyPidsLeaves(s)
	if len(leaves) != 1 || readTrim(filepath.Join(leaves[0], "pids.max")) != strconv.Itoa(limit) {
		c.ok("process/terminate", map[string]any{"processId": "probe"}, nil)
		c.events("probe", 10*time.Second)
		t.Fatalf("no per-process pids.max of %d: leaves %v; stderr:\n%s", limit, leaves, s.stderr.String())
	}
	c.ok("process/terminate", map[string]any{"processId": "probe"}, nil)
	c.events("probe", 10*time.Second)

	c.ok("process/start", startParams("bomb", "/bin/bash", "--norc", "-c", ":(){ :|:& };:; exec sleep 1000"), nil)
	var leaf string
	deadline := time.Now().Add(20 * time.Second)
	for leaf == "" || eventsMax(leaf) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the bomb never reached the limit (leaf %q)", leaf)
		}
		if ls := busyPidsLeaves(s); len(ls) == 1 {
			leaf = ls[0]
		}
		time.Sleep(20 * time.Millisecond)
	}
	c2 := dial(t, s.URL, nil)
	c2.handshake()
	t0 := time.Now()
	out, code := c2.run("echo", startParams("echo", "/bin/echo", "alive"))
	if took := time.Since(t0); out != "alive\n" || code != 0 || took > 5*time.Second {
		t.Errorf("second connection during the bomb: %q, exit %d, %v", out, code, took)
	} else {
		t.Logf("process/start→closed on another connection during the bomb: %v", took)
	}
	cur, _ := strconv.Atoi(readTrim(filepath.Join(leaf, "pids.current")))
	if cur > limit {
		t.Errorf("pids.current %d above the limit %d", cur, limit)
	}
	t.Logf("bomb: pids.current %d, forks refused %d", cur, eventsMax(leaf))

	t0 = time.Now()
	c.ok("process/terminate", map[string]any{"processId": "bomb"}, nil)
	evs := c.events("bomb", 20*time.Second)
	if len(evs) == 0 || evs[len(evs)-1].Method != "process/closed" {
		t.Fatalf("the bomb did not close after terminate: %v", evs)
	}
	t.Logf("terminate→closed: %v", time.Since(t0))
	deadline = time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(leaf); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the bomb's leaf %s survives terminate (pids.current %s)", leaf, readTrim(filepath.Join(leaf, "pids.current")))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
