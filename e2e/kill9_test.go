package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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

// waitMarked waits until a process of every marker runs.
func waitMarked(t *testing.T, marks []string) {
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
	waitMarked(t, marks)
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
			})
		}
	}
}

// e2eLoops is the iteration count of a loop test: n by default (make
// test), CODEX_E2E_LOOPS when set (the full counts).
func e2eLoops(n int) int {
	if v, err := strconv.Atoi(os.Getenv("CODEX_E2E_LOOPS")); err == nil && v > 0 {
		return v
	}
	return n
}

// TestKill9NoSurvivorsLoop repeats the SIGKILL round, cycling through
// pipes and PTY, plain and sandboxed: 8 rounds by default, the 50
// with CODEX_E2E_LOOPS=50. Afterwards no process of any round may run.
func TestKill9NoSurvivorsLoop(t *testing.T) {
	n := e2eLoops(8)
	failed := 0
	start := time.Now()
	for i := 0; i < n; i++ {
		s := startServer(t)
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
				waitMarked(t, marks)
				mcpKill9(t, s)
				if left := survivors(marks, time.Second); len(left) > 0 {
					t.Errorf("1 s after kill -9 of exec-mcp-server, still running: %v", left)
				}
			})
		}
	}
}

// placeholderNames are the protected names a sandboxed run shadows with
// an empty read-only placeholder when they are missing.
var placeholderNames = []string{".git", ".agents", ".codex"}

// placeholdersIn lists the placeholder names present in root.
func placeholdersIn(root string) []string {
	var out []string
	for _, n := range placeholderNames {
		if _, err := os.Lstat(filepath.Join(root, n)); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// waitPlaceholders waits up to d for root to hold no placeholder and
// returns those left.
func waitPlaceholders(root string, d time.Duration) []string {
	for deadline := time.Now().Add(d); ; time.Sleep(10 * time.Millisecond) {
		left := placeholdersIn(root)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
	}
}

// Issue 18, failure 8: the empty read-only placeholders of a sandboxed
// run stayed in the workspace after kill -9 of the server.
func TestKill9PlaceholdersRemoved(t *testing.T) {
	s := startServer(t)
	c := dial(t, s.URL, nil)
	defer c.close()
	c.handshake()
	root := t.TempDir()
	script, marks := kill9Script()
	defer killMarked(t, marks...)
	c.ok("process/start", sandboxedStart("k", root, workspaceSandbox(root, "restricted"), false, script), nil)
	waitMarked(t, marks)
	if got := placeholdersIn(root); len(got) != len(placeholderNames) {
		t.Fatalf("placeholders during the run: %v, want %v", got, placeholderNames)
	}
	killServer(t, s)
	if left := waitPlaceholders(root, time.Second); len(left) > 0 {
		t.Errorf("1 s after kill -9 of the server, placeholders left in the workspace: %v", left)
	}
}

func TestKill9MCPPlaceholdersRemoved(t *testing.T) {
	s := startLimitMCP(t, "ptrace")
	ws := canonicalTemp(t)
	script, marks := kill9Script()
	defer killMarked(t, marks...)
	s.startCall(t, 1, script, ws, workspaceProfile(ws), ws, 60000)
	waitMarked(t, marks)
	if got := placeholdersIn(ws); len(got) == 0 {
		t.Fatalf("no placeholder during the call")
	}
	mcpKill9(t, s)
	if left := waitPlaceholders(ws, time.Second); len(left) > 0 {
		t.Errorf("1 s after kill -9 of exec-mcp-server, placeholders left in the workspace: %v", left)
	}
}

// watchdogOf returns the pid of the watchdog child of server, or 0.
func watchdogOf(server int) int {
	for _, c := range children(server) {
		pid, _ := strconv.Atoi(c)
		cl, _ := os.ReadFile("/proc/" + c + "/cmdline")
		if strings.HasPrefix(filepath.Base(string(cl)), "codex-exec-watchdog") {
			return pid
		}
	}
	return 0
}

// startServerState starts an exec-server whose runtime records go to
// state (so that no other test's server sweeps them).
func startServerState(t *testing.T, state string) *server {
	t.Helper()
	return startServerWith(t, binary, func(c *exec.Cmd) {
		c.Env = append(c.Env, "CODEX_EXEC_SERVER_STATE_DIR="+state)
	})
}
