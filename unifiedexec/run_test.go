package unifiedexec_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/codexec/codex/unifiedexec"
)

// syncBuffer is a bytes.Buffer safe for the output goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A program that is missing, one that cannot be executed and a bad
// working directory each get their shell exit code and a message naming
// what failed.
func TestRunStartFailures(t *testing.T) {
	t.Parallel()
	ctx, c := supervised(t)
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		argv []string
		cwd  string
		code int
		name string
	}{
		{[]string{"no-such-program-x8"}, "", unifiedexec.ExitNotFound, "no-such-program-x8: command not found"},
		{[]string{filepath.Join(dir, "missing")}, "", unifiedexec.ExitNotFound, "missing: command not found"},
		{[]string{plain}, "", unifiedexec.ExitNotExecutable, plain + ": cannot execute"},
		{[]string{dir}, "", unifiedexec.ExitNotExecutable, dir + ": cannot execute"},
		{[]string{"true"}, filepath.Join(dir, "nodir"), unifiedexec.ExitBadCwd, "nodir: no such directory"},
		{[]string{"true"}, plain, unifiedexec.ExitBadCwd, "plain: not a directory"},
	}
	for _, tc := range cases {
		code, err := unifiedexec.Run(ctx, c, unifiedexec.RunOptions{Argv: tc.argv, Cwd: tc.cwd})
		var re *unifiedexec.RunError
		if code != tc.code || !errors.As(err, &re) || re.Code != tc.code || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("%v in %q: code %d, err %v; want %d and %q", tc.argv, tc.cwd, code, err, tc.code, tc.name)
		}
	}
}

// --timeout semantics of timeout(1): SIGTERM first (the trap runs, exit
// 124), SIGKILL after KillAfter for a command that ignores it (137).
func TestRunTimeoutTermThenKill(t *testing.T) {
	t.Parallel()
	ctx, c := supervised(t)
	var out syncBuffer
	code, err := unifiedexec.Run(ctx, c, unifiedexec.RunOptions{
		Argv:    []string{"sh", "-c", `trap "echo got TERM; exit 3" TERM; echo ready; sleep 20 & wait`},
		Timeout: 500 * time.Millisecond, Stdout: &out,
	})
	if code != unifiedexec.ExitTimeout || err != nil || out.String() != "ready\ngot TERM\n" {
		t.Fatalf("TERM: code %d err %v out %q", code, err, out.String())
	}
	start := time.Now()
	code, err = unifiedexec.Run(ctx, c, unifiedexec.RunOptions{
		Argv:    []string{"sh", "-c", `trap "" TERM; sleep 20 & wait; sleep 20`},
		Timeout: 300 * time.Millisecond, KillAfter: 300 * time.Millisecond,
	})
	if code != 137 || err != nil || time.Since(start) > 10*time.Second {
		t.Fatalf("KILL: code %d err %v after %v", code, err, time.Since(start))
	}
}

// A nil Stdin gives the command /dev/null; a Stdin is forwarded and its
// EOF closes the command's stdin.
func TestRunStdin(t *testing.T) {
	t.Parallel()
	ctx, c := supervised(t)
	var out syncBuffer
	code, err := unifiedexec.Run(ctx, c, unifiedexec.RunOptions{Argv: []string{"sh", "-c", "readlink /proc/self/fd/0; cat"}, Stdout: &out})
	if code != 0 || err != nil || out.String() != "/dev/null\n" {
		t.Fatalf("nil stdin: code %d err %v out %q", code, err, out.String())
	}
	out = syncBuffer{}
	code, err = unifiedexec.Run(ctx, c, unifiedexec.RunOptions{Argv: []string{"cat"}, Stdin: strings.NewReader("abc"), Stdout: &out})
	if code != 0 || err != nil || out.String() != "abc" {
		t.Fatalf("stdin: code %d err %v out %q", code, err, out.String())
	}
}

// failingWriter fails every write, as a stdout whose reader went away.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, syscall.EPIPE }

// A failed output write ends the run as SIGPIPE would end a local command,
// and the remote command does not survive it.
func TestRunBrokenOutputKillsCommand(t *testing.T) {
	t.Parallel()
	ctx, c := supervised(t)
	start := time.Now()
	code, err := unifiedexec.Run(ctx, c, unifiedexec.RunOptions{Argv: []string{"yes"}, Stdout: failingWriter{}})
	if code != 128+int(syscall.SIGPIPE) || err != nil || time.Since(start) > 10*time.Second {
		t.Fatalf("code %d err %v after %v", code, err, time.Since(start))
	}
	if n := childrenOf(t, c.ServerPID()); n != 0 {
		t.Fatalf("%d processes of the server survived the run", n)
	}
}

// SIGINT from Signals reaches the command's INT trap once; SIGTERM
// terminates it.
func TestRunSignals(t *testing.T) {
	t.Parallel()
	ctx, c := supervised(t)
	sigs := make(chan os.Signal, 1)
	var out syncBuffer
	ready := make(chan struct{})
	go func() {
		defer close(ready)
		for !strings.Contains(out.String(), "ready") {
			time.Sleep(10 * time.Millisecond)
		}
		sigs <- syscall.SIGINT
	}()
	code, err := unifiedexec.Run(ctx, c, unifiedexec.RunOptions{
		Argv:   []string{"sh", "-c", `trap "echo trapped; exit 130" INT; echo ready; while :; do sleep 0.1; done`},
		Stdout: &out, Signals: sigs,
	})
	<-ready
	if code != 130 || err != nil || out.String() != "ready\ntrapped\n" {
		t.Fatalf("code %d err %v out %q", code, err, out.String())
	}
}

// A lost server fails the run with ExitFailure.
func TestRunServerLost(t *testing.T) {
	t.Parallel()
	ctx, c := supervised(t)
	sigs := make(chan os.Signal)
	pid := c.ServerPID()
	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}()
	code, err := unifiedexec.Run(ctx, c, unifiedexec.RunOptions{Argv: []string{"sleep", "20"}, Signals: sigs})
	var re *unifiedexec.RunError
	if code != unifiedexec.ExitFailure || !errors.As(err, &re) || !errors.Is(err, unifiedexec.ErrTransport) {
		t.Fatalf("code %d err %v", code, err)
	}
}

// childrenOf returns how many child processes (running or zombie) the
// process pid has, its watchdog apart, waiting up to 5 s for none. Every
// thread's children file is read: Go forks from any thread, and a task's
// file lists only the children that thread forked.
func childrenOf(t *testing.T, pid int) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var kids []string
		tasks, _ := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "task"))
		for _, task := range tasks {
			b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "task", task.Name(), "children"))
			for _, kid := range strings.Fields(string(b)) {
				cl, _ := os.ReadFile(filepath.Join("/proc", kid, "cmdline"))
				if argv0, _, _ := strings.Cut(string(cl), "\x00"); argv0 != "codex-exec-watchdog" {
					kids = append(kids, kid)
				}
			}
		}
		if len(kids) == 0 || time.Now().After(deadline) {
			if len(kids) > 0 {
				for _, kid := range kids {
					cl, _ := os.ReadFile(filepath.Join("/proc", kid, "cmdline"))
					t.Logf("child %s: %q", kid, cl)
				}
			}
			return len(kids)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
