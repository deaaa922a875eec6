package e2e

import (
	"bufio"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// docs/client.md §13: a Ctrl-C at a real terminal (SIGINT to the whole
// foreground process group) reaches the command once: its INT trap runs
// and `exec run` exits 130; the supervised server, in a group of its own,
// is not hit. The command sleeps in short steps: a signal that lands
// between fork and exec of a long sleep would delay the trap until it ends.
func TestExecRunCtrlCAtTerminal(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no PTY: %v", err)
	}
	defer ptmx.Close()
	cmd := exec.Command(binary, "exec", "run", "--", "sh", "-c", `trap "echo trapped; exit 130" INT; echo ready; while :; do sleep 0.1; done`)
	cmd.Env = []string{raceEnv, "PATH=/usr/bin:/bin"}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	lines := make(chan string, 16)
	go func() { // ends when the PTY is closed or hung up
		defer close(lines)
		sc := bufio.NewScanner(ptmx)
		for sc.Scan() {
			lines <- strings.TrimRight(sc.Text(), "\r")
		}
	}()
	waitLine(t, lines, "ready")
	pgrp, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPGRP)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(-pgrp, syscall.SIGINT); err != nil { // what the terminal does on ^C
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var code int
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatal("exec run did not end within 15 s of the Ctrl-C")
	}
	var rest []string
	for l := range lines {
		rest = append(rest, l)
	}
	if code != 130 || strings.Count(strings.Join(rest, "\n"), "trapped") != 1 {
		t.Fatalf("exit code %d (want 130), output after ready %q (want one \"trapped\")", code, rest)
	}
}

// waitLine reads lines until want, failing after 15 s.
func waitLine(t *testing.T, lines <-chan string, want string) {
	t.Helper()
	timeout := time.After(15 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("output ended before %q", want)
			}
			if strings.Contains(l, want) {
				return
			}
		case <-timeout:
			t.Fatalf("no %q within 15 s", want)
		}
	}
}

// docs/client.md §13: shells' 127/126, env(1)'s 125 for the working
// directory, and ssh's 255 with one line for connection and
// authentication failures (the server's 401 reason shown).
func TestExecRunFailureCodes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("right-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, "--ws-auth", "capability-token", "--ws-token-file", tokenFile)
	garbage := garbageServer(t)
	cases := []struct {
		env  []string
		args []string
		code int
		msg  string
	}{
		{nil, []string{"--", "no-such-program-x8"}, 127, "no-such-program-x8: command not found"},
		{nil, []string{"--", plain}, 126, plain + ": cannot execute"},
		{nil, []string{"--cwd", filepath.Join(dir, "nodir"), "--", "true"}, 125, "nodir: no such directory"},
		{nil, []string{"--server", "ws://127.0.0.1:1", "--", "true"}, 255, "connection refused"},
		{[]string{"CODEX_EXEC_SERVER_TOKEN=wrong"}, []string{"--server", s.URL, "--", "true"}, 255, "401"},
		{nil, []string{"--server", garbage, "--", "true"}, 255, "initialize"},
		{[]string{"CODEX_EXEC_SERVER_URL=" + s.URL}, []string{"--token-file", tokenFile, "--", "sh", "-c", "exit 7"}, 7, ""},
	}
	for _, tc := range cases {
		_, errOut, code := execRun(t, tc.env, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.msg) || strings.Count(errOut, "\n") > 1 {
			t.Errorf("%v %v: code %d stderr %q; want %d and one line with %q", tc.env, tc.args, code, errOut, tc.code, tc.msg)
		}
	}
}

// garbageServer is a WebSocket server that answers every message with
// text that is not JSON-RPC; it stops with the test.
func garbageServer(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			if _, _, err := c.Read(r.Context()); err != nil {
				return
			}
			if err := c.Write(r.Context(), websocket.MessageText, []byte(`{"id":1,"result":"not an initialize result"}`)); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

// docs/client.md §13: `-n` and an unreadable stdin are not forwarded, so a
// read loop around `exec run` keeps its input, and the command reads
// /dev/null.
func TestExecRunNoStdin(t *testing.T) {
	t.Parallel()
	script := binary + ` exec run -n -- echo "got $l"`
	cmd := exec.Command("sh", "-c", `printf 'a\nb\nc\n' | while read l; do `+script+`; done`)
	out, err := cmd.CombinedOutput()
	if err != nil || string(out) != "got a\ngot b\ngot c\n" {
		t.Fatalf("read loop with -n: %v, %q", err, out)
	}
	writeOnly := filepath.Join(t.TempDir(), "write-only")
	for _, redirect := range []string{"</dev/null", "<&-", "0>>" + writeOnly} {
		cmd := exec.Command("sh", "-c", binary+" exec run -- readlink /proc/self/fd/0 "+redirect)
		out, err := cmd.Output()
		if err != nil || string(out) != "/dev/null\n" {
			t.Errorf("stdin %s: %v, command's stdin %q", redirect, err, out)
		}
	}
}

// docs/client.md §13: the run ends with the command: `exec run -- yes | head
// -1` through --server leaves no yes running on the server.
func TestExecRunLeavesNothingRunning(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	cmd := exec.Command("sh", "-c", binary+" exec run --server "+s.URL+" -- yes | head -1")
	out, err := cmd.Output()
	if err != nil || string(out) != "y\n" {
		t.Fatalf("%v, %q", err, out)
	}
	// Every thread's children, but the server's watchdog (a child of
	// whichever thread started it: it was seen once in the main thread's
	// list, and the run was taken for one that left something).
	assertNoChildren(t, s)
}

// docs/client.md §13: a server that dies mid-command is reported within
// --recovery-timeout, with exit 255.
func TestExecRunServerLostWithinRecoveryTimeout(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	cmd := exec.Command(binary, "exec", "run", "--server", s.URL, "--recovery-timeout", "1s", "--", "sh", "-c", "echo ready; exec sleep 30")
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "ready\n" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("first line %q, %v", line, err)
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	start := time.Now()
	err = cmd.Wait()
	took := time.Since(start)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 255 || took > 4*time.Second || strings.Count(stderr.String(), "\n") != 1 {
		t.Fatalf("exit %v after %v, stderr %q; want 255 within ~1 s and one line", err, took, stderr.String())
	}
}
