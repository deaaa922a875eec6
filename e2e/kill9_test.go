package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Issue 18, failure 2: `kill -9 <server>` while `sh -c 'sleep 311 & sleep
// 312'` runs left both sleeps running under PID 1 (only the direct child
// had a parent-death signal). Within 1 s of a SIGKILL of the server, no
// process it started may run, at any depth, setsid included: the
// watchdog (docs/operations.md §5) kills what the server owned.

// kill9Script starts a background job, a setsid job and a foreground
// sleep, each marked by a unique duration; it returns the script and the
// markers.
func kill9Script() (string, []string) {
	seed := rand.IntN(1_000_000)
	marks := make([]string, 3)
	for i := range marks {
		marks[i] = fmt.Sprintf("31%d%06d.5", 1+i, seed)
	}
	return fmt.Sprintf("sleep %s & setsid sleep %s & sleep %s", marks[0], marks[1], marks[2]), marks
}

// waitAllMarked waits until a process of every marker runs.
func waitAllMarked(t *testing.T, marks []string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		n := 0
		for _, m := range marks {
			if len(markedPidsOf(m)) > 0 {
				n++
			}
		}
		if n == len(marks) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d marked processes started", n, len(marks))
		}
	}
}

// survivors waits up to d for the marked processes to be gone and
// describes those still running then.
func survivors(marks []string, d time.Duration) []string {
	var out []string
	for _, m := range marksGone(marks[0], d, marks[1:]...) {
		for _, pid := range markedPidsOf(m) {
			out = append(out, fmt.Sprintf("%d (sleep %s)", pid, m))
		}
	}
	return out
}

// killServer SIGKILLs the exec-server s and waits for its exit status.
func killServer(t *testing.T, s *server) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for alive(s.cmd.Process.Pid) { // a zombie counts as gone
		time.Sleep(time.Millisecond)
	}
	// Before the server's own cleanup: its reaping (the end of its stderr,
	// shared with the watchdog) is not a SIGTERM exit to check.
	t.Cleanup(func() {
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			t.Errorf("the killed server's stderr stayed open for 10 s")
		}
	})
}

// kill9Round starts the marked script through s, SIGKILLs s and reports
// what still runs 1 s later.
func kill9Round(t *testing.T, s *server, sandboxed, tty bool) []string {
	t.Helper()
	c := dial(t, s.URL, nil)
	defer c.close()
	c.handshake()
	script, marks := kill9Script()
	defer killMarked(t, marks...)
	p := startParams("k", "/bin/sh", "-c", script)
	p["tty"] = tty
	if sandboxed {
		root := t.TempDir()
		p = sandboxedStart("k", root, workspaceSandbox(root, "restricted"), tty, script)
	}
	c.ok("process/start", p, nil)
	waitAllMarked(t, marks)
	killServer(t, s)
	return survivors(marks, time.Second)
}

func TestKill9NoSurvivors(t *testing.T) {
	for _, sandboxed := range []bool{false, true} {
		for _, tty := range []bool{false, true} {
			name := map[bool]string{false: "plain", true: "sandboxed"}[sandboxed] + "/" + map[bool]string{false: "pipes", true: "pty"}[tty]
			t.Run(name, func(t *testing.T) {
				s := startServer(t)
				if left := kill9Round(t, s, sandboxed, tty); len(left) > 0 {
					t.Errorf("1 s after kill -9 of the server, still running: %v", left)
				}
				checkCgroupGone(t, s.stderr.String())
			})
		}
	}
}

// checkCgroupGone fails unless the cgroup directory a server's log names
// (debug level) is gone: its watchdog removed it.
func checkCgroupGone(t *testing.T, log string) {
	t.Helper()
	_, rest, ok := strings.Cut(log, "tree killer: cgroup mode\t{\"dir\": \"")
	dir, _, _ := strings.Cut(rest, "\"")
	if !ok || dir == "" {
		return // not in cgroup mode here
	}
	for deadline := time.Now().Add(time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(dir); os.IsNotExist(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("the killed server's cgroup directory %s is left", dir)
			return
		}
	}
}

// TestKill9NoSurvivorsLoop repeats the SIGKILL round, cycling through
// pipes and PTY, plain and sandboxed, cgroup and subreaper mode: 8 rounds
// by default, the 50 with CODEX_E2E_LOOPS=50.
func TestKill9NoSurvivorsLoop(t *testing.T) {
	n := e2eLoops(t, 8)
	failed := 0
	start := time.Now()
	for i := 0; i < n; i++ {
		var s *server
		if i%8 < 4 {
			s = startServer(t)
		} else {
			s = startSubreaperServer(t)
		}
		if left := kill9Round(t, s, i%2 == 1, i%4 >= 2); len(left) > 0 {
			failed++
			t.Errorf("round %d: 1 s after kill -9, still running: %v", i, left)
		}
	}
	t.Logf("%d rounds, %d with survivors, %v", n, failed, time.Since(start).Round(time.Millisecond))
}

// mcpKill9 SIGKILLs the MCP server s and waits until it is gone.
func mcpKill9(t *testing.T, s *mcpServer) {
	t.Helper()
	if err := syscall.Kill(s.pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for alive(s.pid) {
		time.Sleep(time.Millisecond)
	}
}

// The same for `codex exec-mcp-server`: a call's background, setsid and
// foreground jobs, unsandboxed and sandboxed, in both interception modes.
func TestKill9MCPNoSurvivors(t *testing.T) {
	for _, mode := range []string{"ptrace", "wrapper"} {
		for _, sandboxed := range []bool{false, true} {
			t.Run(mode+"/"+map[bool]string{false: "plain", true: "sandboxed"}[sandboxed], func(t *testing.T) {
				s := startLimitMCP(t, mode)
				ws := canonicalTemp(t)
				script, marks := kill9Script()
				defer killMarked(t, marks...)
				profile := disabledProfile
				if sandboxed {
					profile = workspaceProfile(ws)
				}
				s.startCall(t, 1, script, ws, profile, ws, 60000)
				waitAllMarked(t, marks)
				mcpKill9(t, s)
				if left := survivors(marks, time.Second); len(left) > 0 {
					t.Errorf("1 s after kill -9 of exec-mcp-server, still running: %v", left)
				}
				checkCgroupGone(t, s.stderr.String())
			})
		}
	}
}

// The same without cgroups: in subreaper mode the watchdog walks the
// trees of the children the server told it of (docs/operations.md §5).
func TestKill9NoSurvivorsSubreaper(t *testing.T) {
	for _, sandboxed := range []bool{false, true} {
		for _, tty := range []bool{false, true} {
			name := map[bool]string{false: "plain", true: "sandboxed"}[sandboxed] + "/" + map[bool]string{false: "pipes", true: "pty"}[tty]
			t.Run(name, func(t *testing.T) {
				s := startSubreaperServer(t)
				if left := kill9Round(t, s, sandboxed, tty); len(left) > 0 {
					t.Errorf("1 s after kill -9 of the server, still running: %v", left)
				}
			})
		}
	}
}

// The watchdog is the server's own (docs/operations.md §5): a sandboxed
// command can neither see nor kill it (own PID namespace), SIGINT,
// SIGTERM and SIGHUP do not end it, no command inherits its socket, and
// when it dies anyway the server says so and starts another, which then
// does the job.
func TestWatchdogOwned(t *testing.T) {
	s := startServer(t)
	c := dial(t, s.URL, nil)
	defer c.close()
	c.handshake()
	wd := watchdogOf(s.cmd.Process.Pid)
	if wd == 0 {
		t.Fatal("no watchdog child")
	}
	root := t.TempDir()
	probe := fmt.Sprintf("kill -9 %d; echo rc=$?; ls /proc | grep -c '^[0-9]'", wd)
	out, _, _ := runSandboxed(t, c, sandboxedStart("sb", root, workspaceSandbox(root, "restricted"), false, probe))
	if !strings.Contains(out, "rc=1") {
		t.Errorf("a sandboxed kill of the watchdog: %q, want it to fail", out)
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		_ = syscall.Kill(wd, sig)
	}
	time.Sleep(100 * time.Millisecond)
	if !alive(wd) {
		t.Fatalf("the watchdog died of SIGINT, SIGTERM or SIGHUP")
	}
	fds, code := c.run("fds", startParams("fds", "/bin/sh", "-c", "ls -l /proc/$$/fd"))
	if code != 0 || strings.Contains(fds, "socket:") {
		t.Errorf("a command's fds (exit %d):\n%s", code, fds)
	}
	_ = syscall.Kill(wd, syscall.SIGKILL)
	if !s.waitStderr("the watchdog exited while the server runs; starting it again", 5*time.Second) {
		t.Fatalf("no warning about the dead watchdog")
	}
	var wd2 int
	for deadline := time.Now().Add(5 * time.Second); wd2 == 0 || wd2 == wd; time.Sleep(10 * time.Millisecond) {
		if wd2 = watchdogOf(s.cmd.Process.Pid); time.Now().After(deadline) {
			t.Fatalf("no new watchdog")
		}
	}
	if left := kill9Round(t, s, false, false); len(left) > 0 {
		t.Errorf("with the restarted watchdog, 1 s after kill -9 still running: %v", left)
	}
}

// A clean stop stops and reaps the watchdog (nothing left, no zombie).
func TestWatchdogStopsWithServer(t *testing.T) {
	s := startServer(t)
	wd := watchdogOf(s.cmd.Process.Pid)
	if wd == 0 {
		t.Fatal("no watchdog child")
	}
	s.stop()
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", wd)); err == nil {
		t.Errorf("the watchdog %d is left after the server's exit", wd)
	}
	if strings.Contains(s.stderr.String(), "watchdog: the server is gone") {
		t.Errorf("the watchdog took a clean stop for a death")
	}
}
