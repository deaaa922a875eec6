package cli

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// The private server of `exec run` lives and ends with the run
// (cmd_exec_private.go): when Main returns, with the command's exit code,
// none of its goroutines is left (the server's, its connection's, the
// client's) and no child of this process runs (the watchdog was stopped
// and reaped). Sandboxed too: the command goes through the re-executed
// helper, and this process stays unconfined.
func TestExecRunPrivateServerEndsWithRun(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for _, tc := range []struct {
		argv []string
		code int
	}{
		{[]string{"/bin/true"}, 0},
		{[]string{"/bin/sh", "-c", "exit 3"}, 3},
		{[]string{"/bin/sh", "-c", "kill -TERM $$"}, 128 + 15},
		{[]string{"no-such-program-s23"}, 127},
		{[]string{"--sandbox", "read-only", "--", "/bin/sh", "-c", "! touch /etc/s23-escape 2>/dev/null"}, 0},
	} {
		args := append([]string{"codex", "exec", "run", "-n"}, tc.argv...)
		if !strings.HasPrefix(tc.argv[0], "--") {
			args = append([]string{"codex", "exec", "run", "-n", "--"}, tc.argv...)
		}
		if got := Main(args); got != tc.code {
			t.Errorf("%v: exit %d, want %d", tc.argv, got, tc.code)
		}
		if kids := childrenOfSelf(t); len(kids) > 0 {
			t.Errorf("%v: children left after the run: %v", tc.argv, kids)
		}
		if st := selfStatus(t, "NoNewPrivs", "Seccomp"); st != "NoNewPrivs:\t0\nSeccomp:\t0\n" {
			t.Errorf("%v: the exec run process is confined: %q", tc.argv, st)
		}
	}
	if _, err := os.Stat("/etc/s23-escape"); err == nil {
		_ = os.Remove("/etc/s23-escape")
		t.Error("the sandboxed command wrote /etc")
	}
}

// A configuration the private server refuses (here its
// CODEX_EXEC_SERVER_* variable) fails the run with 255, as an unreachable
// server does, and starts nothing.
func TestExecRunPrivateServerBadConfig(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	t.Setenv("CODEX_EXEC_SERVER_MAX_MEMORY_PER_PROCESS", "lots")
	if got := Main([]string{"codex", "exec", "run", "-n", "--", "/bin/true"}); got != 255 {
		t.Fatalf("exit %d, want 255", got)
	}
	if kids := childrenOfSelf(t); len(kids) > 0 {
		t.Errorf("children left: %v", kids)
	}
}

// The private server reads exec-server's flags as `codex exec-server
// --listen stdio --log-level warn --shutdown-grace 0` would: their
// defaults, then CODEX_EXEC_SERVER_* variables, then those arguments.
func TestPrivateServerContext(t *testing.T) {
	t.Setenv("CODEX_EXEC_SERVER_MAX_PROCESSES", "7")
	t.Setenv("CODEX_EXEC_SERVER_SHUTDOWN_GRACE", "9s")
	t.Setenv("CODEX_EXEC_SERVER_LISTEN", "ws://127.0.0.1:0")
	c, err := privateServerContext(newApp(), privateServerArgs)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.String("listen"); got != "stdio" {
		t.Errorf("listen %q", got)
	}
	if got := c.Duration("shutdown-grace"); got != 0 {
		t.Errorf("shutdown-grace %v, want 0 (the command line wins)", got)
	}
	if got := c.Int("max-processes"); got != 7 {
		t.Errorf("max-processes %d, want 7 from the environment", got)
	}
	if got := c.String("log-level"); got != "warn" {
		t.Errorf("log-level %q", got)
	}
	if got := c.Duration("session-ttl"); got != 80*time.Second {
		t.Errorf("session-ttl %v, want the default", got)
	}
	s, err := execServerSetup(c)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.logger.Sync() }()
	if !s.target.stdio || s.cfg.ShutdownGrace >= 0 || s.cfg.Sessions.MaxProcesses != 7 {
		t.Errorf("setup: stdio %v, grace %v, max processes %d", s.target.stdio, s.cfg.ShutdownGrace, s.cfg.Sessions.MaxProcesses)
	}
	for _, kv := range s.cfg.Sessions.BaseEnv {
		if strings.HasPrefix(kv, "CODEX_EXEC_SERVER_MAX_PROCESSES=") {
			t.Errorf("the server's own variable reaches the commands: %s", kv)
		}
	}
}

// childrenOfSelf lists the children of every thread of this process.
func childrenOfSelf(t *testing.T) []int {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, task := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + task.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				out = append(out, pid)
			}
		}
	}
	return out
}

// selfStatus returns the named lines of /proc/self/status, in order.
func selfStatus(t *testing.T, names ...string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for _, name := range names {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, name+":") {
				out.WriteString(line + "\n")
			}
		}
	}
	return out.String()
}
