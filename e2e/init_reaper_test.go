package e2e

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestInitReapsOrphansAsPID1 runs the server as PID 1, where every orphan
// of the namespace re-parents to it. Commands leave orphans (background
// children, double forks, setsid daemons) while fifty short commands run
// and exit with known codes: no zombie may remain, and the reaper must not
// steal one exit status of the server's own children.
func TestInitReapsOrphansAsPID1(t *testing.T) {
	c := startAsPID1(t)
	if out, code := c.run("ppid", startParams("ppid", "sh", "-c", "echo $PPID")); code != 0 || strings.TrimSpace(out) != "1" {
		t.Fatalf("a command's parent is %q (exit %d), want PID 1: the server", out, code)
	}
	orphanScripts := []string{
		"sleep 0.2 >/dev/null 2>&1 & sleep 0.4 >/dev/null 2>&1 & exit 0",
		"(sh -c 'sleep 0.3; exit 4' >/dev/null 2>&1 &); exit 0",                    // double fork
		"setsid sh -c '(sleep 0.1 &); sleep 0.2; exit 9' >/dev/null 2>&1 & exit 0", // daemon with a grandchild
		"sh -c 'kill -9 $$' & sleep 0.05 & exit 0",                                 // an orphan that dies by a signal
	}
	want := map[string]int{}
	for round := 0; round < 5; round++ {
		for i, script := range orphanScripts {
			id := fmt.Sprintf("orphans-%d-%d", round, i)
			c.ok("process/start", startParams(id, "sh", "-c", script), nil)
			want[id] = 0
		}
		for i := 0; i < 10; i++ {
			id := fmt.Sprintf("short-%d-%d", round, i)
			code := (round*10 + i) % 8
			script := fmt.Sprintf("sleep 0.%d; exit %d", i%5, code)
			c.ok("process/start", startParams(id, "sh", "-c", script), nil)
			want[id] = code
		}
	}
	for id, code := range want {
		if _, got := checkEvents(t, c.events(id, 20*time.Second)); got != code {
			t.Errorf("%s exited with %d, want %d: an exit status was lost", id, got, code)
		}
	}
	zombies := waitNoZombies(t, c)
	if len(zombies) > 0 {
		t.Fatalf("zombies left in the namespace after 10 s:\n%s", strings.Join(zombies, "\n"))
	}
	// The log lines reach the buffer through another goroutine: give them
	// a moment.
	for end := time.Now().Add(5 * time.Second); strings.Count(c.stderr.String(), "reaped orphan") < 5*4 && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	if n := strings.Count(c.stderr.String(), "reaped orphan"); n < 5*4 {
		t.Errorf("the server logged %d reaped orphans, want at least %d", n, 5*4)
	}
	if strings.Contains(c.stderr.String(), "no child processes") {
		t.Errorf("a child's status was reaped behind its owner's back")
	}
}

// waitNoZombies lists the namespace's processes through the server (its
// /proc is the namespace's) until no zombie is left or 10 s passed, and
// returns the zombies' stat lines of the last listing.
func waitNoZombies(t *testing.T, c *pid1Server) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for n := 0; ; n++ {
		id := fmt.Sprintf("ps-%d", n)
		out, code := c.run(id, startParams(id, "sh", "-c", "cat /proc/[0-9]*/stat 2>/dev/null; exit 0"))
		if code != 0 || !strings.HasPrefix(out, "1 (codex) ") {
			t.Fatalf("listing /proc: exit %d, output %q; want PID 1 first, the server", code, out)
		}
		var zombies []string
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if i := strings.LastIndexByte(line, ')'); i > 0 && strings.HasPrefix(line[i:], ") Z") {
				zombies = append(zombies, line)
			}
		}
		if len(zombies) == 0 || time.Now().After(deadline) {
			return zombies
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestInitSubreaper: with --init and not PID 1, the server is a child
// subreaper: an orphan of a command re-parents to the server (not to the
// host's init) and is reaped when it exits.
func TestInitSubreaper(t *testing.T) {
	s := startServer(t, "--init")
	c := dial(t, s.URL, nil)
	c.handshake()
	out, code := c.run("bg", startParams("bg", "sh", "-c", "sleep 0.5 >/dev/null 2>&1 & echo $!"))
	orphan, err := strconv.Atoi(strings.TrimSpace(out))
	if code != 0 || err != nil {
		t.Fatalf("exit %d, output %q", code, out)
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", orphan))
	if err != nil {
		t.Fatalf("the orphan is gone already (%v); the test needs it alive", err)
	}
	line := string(stat)
	fields := strings.Fields(line[strings.LastIndexByte(line, ')')+1:])
	if ppid, _ := strconv.Atoi(fields[1]); ppid != s.cmd.Process.Pid {
		t.Fatalf("the orphan's parent is %d, want the server %d", ppid, s.cmd.Process.Pid)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", orphan)); os.IsNotExist(err) {
			break // reaped: a zombie would still have its /proc entry
		}
		if time.Now().After(deadline) {
			t.Fatalf("the orphan %d was not reaped within 10 s; zombies of the server: %v", orphan, zombieChildren(s.cmd.Process.Pid))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
