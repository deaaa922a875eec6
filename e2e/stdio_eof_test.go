package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runPiped runs the binary with args, stdin holding input and then its
// end, and returns what it wrote on stdout, one JSON object per line.
func runPiped(t *testing.T, input string, args ...string) []map[string]any {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = []string{raceEnv, "PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "CODEX_HOME=" + t.TempDir()}
	cmd.Stdin = strings.NewReader(input)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%v: %v; stderr:\n%s", args, err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%v did not exit within 30 s of its end of input", args)
	}
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("stdout line %q is not JSON", l)
		}
		out = append(out, m)
	}
	return out
}

// answersInOrder returns the ids of the responses in msgs, in order, and
// fails on any error response.
func answersInOrder(t *testing.T, msgs []map[string]any) []string {
	t.Helper()
	var ids []string
	for _, m := range msgs {
		if _, ok := m["method"]; ok {
			continue
		}
		if e, ok := m["error"]; ok {
			t.Fatalf("request %v answered with an error: %v", m["id"], e)
		}
		ids = append(ids, fmt.Sprint(m["id"]))
	}
	return ids
}

// Every request read before the end of stdin gets its real answer, in
// order (environment/status, a control request, may overtake the others:
// docs/protocol.md §1.5, so the last one is a process/read), and the process started before it runs to its end with its
// output, exited and closed notifications: every time
// (docs/protocol.md §1.4). Before, most runs answered every request with
// -32603 "connection closed before the request was answered".
func TestStdioEOFAnswersEveryRequest(t *testing.T) {
	t.Parallel()
	input := strings.Join([]string{
		`{"id":1,"method":"initialize","params":{"clientName":"eof"}}`,
		`{"method":"initialized"}`,
		`{"id":2,"method":"environment/status"}`,
		`{"id":3,"method":"process/start","params":{"processId":"p","argv":["/bin/sh","-c","echo out"],"cwd":"/tmp","env":{},"tty":false}}`,
		`{"id":4,"method":"process/read","params":{"processId":"p","afterSeq":0,"waitMs":0}}`,
	}, "\n") + "\n"
	for i := range e2eLoops(t, 20) { // 200 by hand: CODEX_E2E_LOOPS=200
		msgs := runPiped(t, input, "exec-server", "--listen", "stdio")
		if got := strings.Join(answersInOrder(t, msgs), ","); got != "1,2,3,4" {
			t.Fatalf("run %d: answers %s, want 1,2,3,4; stdout %v", i, got, msgs)
		}
		var events []string
		for _, m := range msgs {
			switch m["method"] {
			case "process/output":
				events = append(events, "output")
			case "process/exited":
				events = append(events, fmt.Sprintf("exited:%v", m["params"].(map[string]any)["exitCode"]))
			case "process/closed":
				events = append(events, "closed")
			}
		}
		if got := strings.Join(events, ","); got != "output,exited:0,closed" && got != "exited:0,output,closed" {
			t.Fatalf("run %d: process events %s, want output, exited 0 and closed", i, got)
		}
	}
}

// The MCP server answers initialize and tools/list read before the end of
// stdin, every time (docs/shell-tool.md §3.1).
func TestMCPEOFAnswersEveryRequest(t *testing.T) {
	t.Parallel()
	input := strings.Join([]string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"eof","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":2,"method":"ping"}`,
	}, "\n") + "\n"
	for i := range e2eLoops(t, 20) { // 200 by hand: CODEX_E2E_LOOPS=200
		msgs := runPiped(t, input, "exec-mcp-server", "--bash", "/bin/bash")
		if got := strings.Join(answersInOrder(t, msgs), ","); got != "0,1,2" {
			t.Fatalf("run %d: answers %s, want 0,1,2; stdout %v", i, got, msgs)
		}
		tools := msgs[1]["result"].(map[string]any)["tools"].([]any)
		if len(tools) != 1 || tools[0].(map[string]any)["name"] != "shell" {
			t.Fatalf("run %d: tools/list %v", i, msgs[1])
		}
	}
}

// An initialize with a protocol version the server does not support is
// answered with one it does, the newest (MCP lifecycle: "the server MUST
// respond with another protocol version it supports"); a supported one is
// echoed (docs/shell-tool.md §3.1).
func TestMCPUnknownProtocolVersion(t *testing.T) {
	for _, tc := range []struct{ asked, want string }{
		{"1999-01-01", "2025-06-18"},
		{"2024-10-07", "2025-06-18"},
		{"2099-01-01", "2025-06-18"},
		{"not-a-date", "2025-06-18"},
		{"2024-11-05", "2024-11-05"},
		{"2025-03-26", "2025-03-26"},
		{"2025-06-18", "2025-06-18"},
	} {
		input := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + tc.asked + `","capabilities":{},"clientInfo":{"name":"v","version":"1"}}}` + "\n"
		msgs := runPiped(t, input, "exec-mcp-server", "--bash", "/bin/bash")
		got := msgs[0]["result"].(map[string]any)["protocolVersion"]
		if got != tc.want {
			t.Errorf("initialize with %q answered protocolVersion %v, want %q", tc.asked, got, tc.want)
		}
	}
}

// stdioChild is a stdio server whose stdin the test holds open.
type stdioChild struct {
	cmd    *exec.Cmd
	out    *stdioServer
	stdout io.Closer // the test's end of the child's stdout
	stderr *lockedBuffer
	done   chan struct{}
}

// startHeld starts the binary with args and stdin a pipe the test keeps
// open; stdout is read line by line.
func startHeld(t *testing.T, args ...string) *stdioChild {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = []string{raceEnv, "PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "CODEX_HOME=" + t.TempDir()}
	s := &stdioServer{cmd: cmd, lines: make(chan string, 1000)}
	s.in, _ = cmd.StdinPipe()
	out, started := ownStdout(t, cmd)
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	started()
	go readLines(out, s.lines)
	c := &stdioChild{cmd: cmd, out: s, stdout: out, stderr: stderr, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(c.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-c.done
		s.in.Close()
		out.Close()
		if t.Failed() {
			t.Logf("%s stderr:\n%s", args[0], stderr.String())
		}
	})
	return c
}

// exitAfter sends sig and returns how long the child took to exit, failing
// after limit or on a non-zero status.
func (c *stdioChild) exitAfter(t *testing.T, sig syscall.Signal, limit time.Duration) time.Duration {
	t.Helper()
	t0 := time.Now()
	_ = c.cmd.Process.Signal(sig)
	select {
	case <-c.done:
	case <-time.After(limit):
		t.Fatalf("still running %v after %v with its stdin open", limit, sig)
	}
	if code := c.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit status %d after %v, want 0", code, sig)
	}
	return time.Since(t0)
}

// SIGTERM and SIGINT end exec-mcp-server at once although its stdin stays
// open (docs/shell-tool.md §3.1). Before, it ran on until its next input
// line: stdin was read by a blocking read(2) that Close could not end.
func TestMCPSignalWithStdinOpen(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			c := startHeld(t, "exec-mcp-server", "--bash", "/bin/bash")
			c.out.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}}`+"\n")
			c.out.recv(t)
			d := c.exitAfter(t, sig, 3*time.Second)
			t.Logf("exec-mcp-server exited %v after %v", d.Round(time.Millisecond), sig)
		})
	}
}

// SIGTERM ends a stdio exec-server whose stdin stays open: its process
// gets SIGTERM, its exited and closed notifications are written, and the
// server exits 0 (docs/operations.md §5).
func TestStdioSignalWithStdinOpen(t *testing.T) {
	c := startHeld(t, "exec-server", "--listen", "stdio")
	s := c.out
	s.send(t, `{"id":1,"method":"initialize","params":{"clientName":"x"}}`+"\n"+`{"method":"initialized"}`+"\n")
	s.recv(t)
	s.send(t, `{"id":2,"method":"process/start","params":{"processId":"p","argv":["/bin/sh","-c","trap 'echo got-term; exit 3' TERM; echo ready; while :; do sleep 0.05; done"],"cwd":"/tmp","env":{"PATH":"/usr/bin:/bin"},"tty":false}}`+"\n")
	for m := s.recv(t); m["method"] != "process/output"; m = s.recv(t) {
	}
	d := c.exitAfter(t, syscall.SIGTERM, 5*time.Second)
	t.Logf("stdio exec-server exited %v after SIGTERM", d.Round(time.Millisecond))
	var events []string
	for l := range s.lines {
		var m map[string]any
		_ = json.Unmarshal([]byte(l), &m)
		if meth, ok := m["method"].(string); ok {
			events = append(events, meth)
			if meth == "process/exited" {
				if code := m["params"].(map[string]any)["exitCode"]; code != float64(3) {
					t.Errorf("exit code %v, want 3 (the TERM trap ran)", code)
				}
			}
		}
	}
	if got := strings.Join(events, ","); !strings.HasSuffix(got, "process/exited,process/closed") {
		t.Fatalf("notifications after SIGTERM: %s, want the trap's output, exited and closed; stderr:\n%s", got, c.stderr.String())
	}
}

// A stdio client that goes away, both its ends of the server's stdin and
// stdout closed as when it dies, gets the drain of docs/protocol.md §1.4:
// the command runs its TERM trap and the server exits 0. Before, the next
// write of output killed the server with SIGPIPE (the Go runtime's default
// for a broken stdout), and its watchdog SIGKILLed the command: no trap ran.
// The command starts with SIGPIPE at its default all the same.
func TestStdioClientGone(t *testing.T) {
	dir := t.TempDir()
	c := startHeld(t, "exec-server", "--listen", "stdio", "--shutdown-grace", "2s")
	s := c.out
	s.send(t, `{"id":1,"method":"initialize","params":{"clientName":"x"}}`+"\n"+`{"method":"initialized"}`+"\n")
	s.recv(t)
	script := fmt.Sprintf(`grep SigIgn /proc/$$/status > %[1]s/sigign; trap 'echo > %[1]s/term; exit 3' TERM; while :; do echo tick; sleep 0.05; done`, dir)
	s.send(t, `{"id":2,"method":"process/start","params":{"processId":"p","argv":["/bin/sh","-c",`+strconv.Quote(script)+`],"cwd":"/tmp","env":{"PATH":"/usr/bin:/bin"},"tty":false}}`+"\n")
	for m := s.recv(t); m["method"] != "process/output"; m = s.recv(t) {
	}
	c.clientGone(t)
	if _, err := os.Stat(filepath.Join(dir, "term")); err != nil {
		t.Errorf("the command's TERM trap did not run: %v", err)
	}
	// The server catches SIGPIPE; its commands must not start with it ignored.
	b, _ := os.ReadFile(filepath.Join(dir, "sigign"))
	ign, err := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(string(b), "SigIgn:")), 16, 64)
	if err != nil || ign&(1<<(syscall.SIGPIPE-1)) != 0 {
		t.Errorf("the command's %q: SIGPIPE ignored or unreadable (%v)", b, err)
	}
}

// clientGone closes the test's ends of the child's stdin and stdout, as a
// client that dies does, and fails unless the child then exits 0 within
// 10 s.
func (c *stdioChild) clientGone(t *testing.T) {
	t.Helper()
	t0 := time.Now()
	_ = c.out.in.Close()
	_ = c.stdout.Close()
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		t.Fatal("still running 10 s after its client went away")
	}
	t.Logf("exited %v after its client went away: %v", time.Since(t0).Round(time.Millisecond), c.cmd.ProcessState)
	if code := c.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit status %v, want 0", c.cmd.ProcessState)
	}
}

// The same for exec-mcp-server, whose end of input kills the running
// calls' commands (docs/shell-tool.md §3): it exits 0 and leaves none.
// Before, it died of SIGPIPE.
func TestMCPClientGone(t *testing.T) {
	c := startHeld(t, "exec-mcp-server", "--bash", "/bin/bash")
	s := c.out
	s.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}}`+"\n")
	s.recv(t)
	mark := fmt.Sprintf("%d.25", 4_000_000+os.Getpid())
	defer killMarked(t, mark)
	s.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell","arguments":{"command":"sleep `+mark+`","workdir":"/tmp"}}}`+"\n")
	waitAllMarked(t, []string{mark})
	c.clientGone(t)
	if left := survivors([]string{mark}, time.Second); len(left) > 0 {
		t.Errorf("still running 1 s after the exit: %v", left)
	}
}

// readLines sends every line of r to lines and closes it at the end.
// ownStdout gives cmd a stdout pipe and returns its read end, which the
// caller closes, and started, to call after cmd.Start. Unlike
// cmd.StdoutPipe's, the read end is not closed by cmd.Wait as soon as the
// command exits, under a reader that may not have taken its last lines
// yet (a loaded run lost the exited and closed notifications a stdio
// server wrote just before it exited): a reader gets every line, up to the
// EOF.
func ownStdout(t *testing.T, cmd *exec.Cmd) (r *os.File, started func()) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = w
	return r, func() { _ = w.Close() }
}

func readLines(r io.Reader, lines chan<- string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		lines <- sc.Text()
	}
	close(lines)
}
