package e2e

import (
	"bufio"
	"io"
	"net"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// listener is a `codex exec-server` child started by launchServer.
type listener struct {
	cmd    *exec.Cmd
	URL    string
	stderr *lockedBuffer
	stdin  io.WriteCloser
	done   chan struct{}
}

// launchServer runs `codex exec-server args...` with env added to a clean
// environment and stdin on a pipe, and returns once it printed its URL.
// The test's cleanup ends it with SIGTERM.
func launchServer(t *testing.T, env []string, args ...string) *listener {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"exec-server"}, args...)...)
	cmd.Env = append([]string{raceEnv, "PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}, env...)
	l := &listener{cmd: cmd, stderr: &lockedBuffer{}, done: make(chan struct{})}
	cmd.Stderr = l.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	l.stdin = stdin
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- s
		_, _ = io.Copy(io.Discard, stdout)
		_ = cmd.Wait()
		close(l.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-l.done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-l.done
			t.Error("server did not exit within 15 s of SIGTERM")
		}
		_ = stdin.Close()
	})
	select {
	case s := <-line:
		l.URL = strings.TrimSpace(s)
	case <-time.After(20 * time.Second):
		t.Fatalf("no URL; stderr:\n%s", l.stderr.String())
	}
	return l
}

// port is the port of the listener's URL.
func (l *listener) port(t *testing.T) string {
	_, port, err := net.SplitHostPort(strings.TrimPrefix(l.URL, "ws://"))
	if err != nil {
		t.Fatalf("URL %q: %v", l.URL, err)
	}
	return port
}

// canDial reports whether a TCP connection to addr is accepted.
func canDial(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err == nil {
		c.Close()
	}
	return err == nil
}

// TestListenIPv4Only: ws://0.0.0.0:0 listens on IPv4 only (not dual
// stack) and prints the address as given with the bound port; ws://[::1]:0
// is printed in brackets.
func TestListenIPv4Only(t *testing.T) {
	l := launchServer(t, nil, "--listen", "ws://0.0.0.0:0")
	if !strings.HasPrefix(l.URL, "ws://0.0.0.0:") || l.port(t) == "0" {
		t.Fatalf("URL %q, want ws://0.0.0.0:PORT", l.URL)
	}
	if !canDial("127.0.0.1:" + l.port(t)) {
		t.Fatalf("127.0.0.1:%s refused", l.port(t))
	}
	probe, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback here (%v): the IPv6 side is not checked", err)
	}
	probe.Close()
	if canDial("[::1]:" + l.port(t)) {
		t.Errorf("[::1]:%s accepted: 0.0.0.0 is listening on IPv6 too", l.port(t))
	}
	l6 := launchServer(t, nil, "--listen", "ws://[::1]:0")
	if !strings.HasPrefix(l6.URL, "ws://[::1]:") || !canDial("[::1]:"+l6.port(t)) {
		t.Errorf("ws://[::1]:0 gave %q", l6.URL)
	}
}

// TestListenNonLoopbackWarning: a server others can reach warns on stderr
// unless it authenticates; a loopback one does not warn.
func TestListenNonLoopbackWarning(t *testing.T) {
	const warning = "non-loopback address without authentication"
	token := "--ws-token-sha256=" + strings.Repeat("ab", 32)
	for _, tc := range []struct {
		args []string
		warn bool
	}{
		{[]string{"--listen", "ws://0.0.0.0:0"}, true},
		{[]string{"--listen", "ws://0.0.0.0:0", "--ws-auth", "capability-token", token}, false},
		{[]string{"--listen", "ws://127.0.0.1:0"}, false},
	} {
		l := launchServer(t, nil, tc.args...)
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(l.stderr.String(), "exec-server listening") && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if got := strings.Contains(l.stderr.String(), warning); got != tc.warn {
			t.Errorf("%v: warning %v, want %v; stderr:\n%s", tc.args, got, tc.warn, l.stderr.String())
		}
	}
}

// TestExecServerEnvVars: CODEX_EXEC_SERVER_<FLAG> sets a flag, the command
// line wins over it, and a bad value is a usage error naming the variable.
func TestExecServerEnvVars(t *testing.T) {
	env := []string{"CODEX_EXEC_SERVER_LISTEN=ws://0.0.0.0:0", "CODEX_EXEC_SERVER_LOG_FORMAT=json"}
	l := launchServer(t, env)
	if !strings.HasPrefix(l.URL, "ws://0.0.0.0:") {
		t.Errorf("CODEX_EXEC_SERVER_LISTEN=ws://0.0.0.0:0: URL %q", l.URL)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(l.stderr.String(), "exec-server listening") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if first, _, _ := strings.Cut(l.stderr.String(), "\n"); !strings.HasPrefix(first, "{") {
		t.Errorf("CODEX_EXEC_SERVER_LOG_FORMAT=json: log line %q", first)
	}
	if l2 := launchServer(t, env, "--listen", "ws://127.0.0.1:0"); !strings.HasPrefix(l2.URL, "ws://127.0.0.1:") {
		t.Errorf("--listen over the variable: URL %q", l2.URL)
	}
	stdout, stderr, code := runCLI(t, []string{"CODEX_EXEC_SERVER_SESSION_TTL=forever"}, "exec-server")
	if code != 2 || stdout != "" || !strings.Contains(stderr, "CODEX_EXEC_SERVER_SESSION_TTL") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("bad CODEX_EXEC_SERVER_SESSION_TTL: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestExitOnStdinClose: with --exit-on-stdin-close (or its variable) the
// server shuts down cleanly (status 0) when its stdin pipe closes; without
// it, it keeps serving.
func TestExitOnStdinClose(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		args []string
		exit bool
	}{
		{nil, []string{"--exit-on-stdin-close"}, true},
		{[]string{"CODEX_EXEC_SERVER_EXIT_ON_STDIN_CLOSE=true"}, nil, true},
		{nil, nil, false},
	} {
		l := launchServer(t, tc.env, tc.args...)
		if _, err := l.stdin.Write([]byte("ignored\n")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
		if !canDial("127.0.0.1:" + l.port(t)) {
			t.Fatalf("%v %v: stopped before stdin closed", tc.env, tc.args)
		}
		l.stdin.Close()
		wait := time.Second
		if tc.exit {
			wait = 10 * time.Second // a -race binary sleeps 1 s on its way out
		}
		select {
		case <-l.done:
			if !tc.exit {
				t.Errorf("no --exit-on-stdin-close: exited when stdin closed")
			} else if code := l.cmd.ProcessState.ExitCode(); code != 0 {
				t.Errorf("%v %v: exit status %d, want 0", tc.env, tc.args, code)
			}
		case <-time.After(wait):
			if tc.exit {
				t.Errorf("%v %v: still running %v after stdin closed; stderr:\n%s", tc.env, tc.args, wait, l.stderr.String())
			}
		}
	}
}
