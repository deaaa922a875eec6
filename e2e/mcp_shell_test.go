package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// mcpServer runs `codex exec-mcp-server` with SIGPIPE ignored by its
// parent (as some MCP clients start servers): calls must still see it at
// its default.
type mcpServer struct {
	in     io.WriteCloser
	lines  chan string
	pid    int           // the server's (sh execs it)
	stderr *lockedBuffer // the server's logs
}

func startMCP(t *testing.T, bash string) *mcpServer {
	t.Helper()
	return startMCPWith(t, nil, "--bash", bash)
}

// startMCPWith starts the server with args after exec-mcp-server and env
// added to its short environment.
func startMCPWith(t *testing.T, env []string, args ...string) *mcpServer {
	t.Helper()
	return startMCPScript(t, env, `trap '' PIPE; exec "$0" exec-mcp-server "$@"`, args...)
}

// startMCPScript starts the server through the sh script (which gets the
// binary as $0 and args as "$@", and must exec the server last).
func startMCPScript(t *testing.T, env []string, script string, args ...string) *mcpServer {
	t.Helper()
	cmd := exec.Command("/bin/sh", append([]string{"-c", script, binary}, args...)...)
	cmd.Env = append([]string{raceEnv, "PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}, env...)
	return startMCPCmd(t, cmd)
}

// startMCPCmd starts cmd, which runs the server on its stdio, and
// initializes the MCP session.
func startMCPCmd(t *testing.T, cmd *exec.Cmd) *mcpServer {
	t.Helper()
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	s := &mcpServer{in: in, lines: make(chan string, 100), stderr: &lockedBuffer{}}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.pid = cmd.Process.Pid
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 4<<20)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
	}()
	t.Cleanup(func() {
		in.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Errorf("exec-mcp-server did not exit on stdin EOF")
		}
		if t.Failed() {
			t.Logf("exec-mcp-server stderr:\n%s", s.stderr.String())
		}
	})
	s.send(t, `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}}`)
	if l := s.recv(t); !strings.Contains(l, `"codex/sandbox-state":{"version":"1.0.0"}`) {
		t.Fatalf("initialize: %s", l)
	}
	s.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s
}

func (s *mcpServer) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

func (s *mcpServer) recv(t *testing.T) string {
	t.Helper()
	select {
	case l, ok := <-s.lines:
		if !ok {
			t.Fatal("exec-mcp-server closed stdout")
		}
		return l
	case <-time.After(60 * time.Second): // a hang, not a slow call on a loaded CI machine
		t.Fatal("no answer from exec-mcp-server")
	}
	return ""
}

// shellResult is the JSON object inside a tools/call result.
type shellResult struct {
	ExitCode int    `json:"exit_code"`
	Output   string `json:"output"`
	TimedOut bool   `json:"timed_out"`
	Duration struct {
		Secs  uint64 `json:"secs"`
		Nanos uint32 `json:"nanos"`
	} `json:"duration"`
}

// call runs one shell call with the given _meta sandbox state (a JSON
// permission profile and cwd) and returns its result.
func (s *mcpServer) call(t *testing.T, id int, command, workdir, profile, cwd string, timeoutMs int) shellResult {
	t.Helper()
	s.startCall(t, id, command, workdir, profile, cwd, timeoutMs)
	return s.result(t, id)
}

// startCall sends a shell call without waiting for its answer.
func (s *mcpServer) startCall(t *testing.T, id int, command, workdir, profile, cwd string, timeoutMs int) {
	t.Helper()
	meta := fmt.Sprintf(`{"codex/sandbox-state":{"permissionProfile":%s,"sandboxCwd":"file://%s"}}`, profile, cwd)
	s.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"shell","arguments":{"command":%q,"workdir":%q,"login":false,"timeout_ms":%d},"_meta":%s}}`,
		id, command, workdir, timeoutMs, meta))
}

// result reads the answer to the call id, which must be the next message.
func (s *mcpServer) result(t *testing.T, id int) shellResult {
	t.Helper()
	line := s.recv(t)
	var msg struct {
		ID     int `json:"id"`
		Result struct {
			Content []struct {
				Type, Text string
			} `json:"content"`
			IsError bool `json:"isError"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(line), &msg); err != nil || msg.ID != id || len(msg.Result.Content) != 1 || msg.Result.IsError {
		t.Fatalf("tools/call: %s (%v)", line, err)
	}
	var r shellResult
	if err := json.Unmarshal([]byte(msg.Result.Content[0].Text), &r); err != nil {
		t.Fatalf("result text: %s", msg.Result.Content[0].Text)
	}
	return r
}

const disabledProfile = `{"type":"disabled"}`

// TestMCPShellCall: a call runs Debian's Bash and reports the docs/shell-tool.md §3.3
// result: arrival-order output, the exit code, SIGPIPE at its default
// although the server's parent ignored it.
func TestMCPShellCall(t *testing.T) {
	s := startMCP(t, "/bin/bash")
	dir := t.TempDir()
	r := s.call(t, 1, `echo out; echo err >&2; yes | head -c1; echo " ${PIPESTATUS[0]}"; exit 3`, dir, disabledProfile, dir, 10000)
	if r.ExitCode != 3 || r.Output != "out\nerr\ny 141\n" || r.TimedOut {
		t.Fatalf("%+v", r)
	}
}

// TestMCPShellTimeout: a timeout is a result (timed_out, 124, the output
// so far), not an error, and comes at the limit.
func TestMCPShellTimeout(t *testing.T) {
	s := startMCP(t, "/bin/bash")
	dir := t.TempDir()
	start := time.Now()
	r := s.call(t, 1, "echo begun; sleep 30", dir, disabledProfile, dir, 2000)
	if !r.TimedOut || r.ExitCode != 124 || r.Output != "begun\n" || time.Since(start) > 7*time.Second {
		t.Fatalf("%+v after %v", r, time.Since(start))
	}
}

// TestMCPShellSandboxDeniesWrite: with Codex 0.169.0's per-call
// workspace-write profile, the command writes its workspace and not
// outside it.
func TestMCPShellSandboxDeniesWrite(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	profile := fmt.Sprintf(`{"type":"managed","file_system":{"type":"restricted","entries":[{"path":{"type":"special","value":{"kind":"root"}},"access":"read"},{"path":{"type":"path","path":%q},"access":"write"}]},"network":"restricted"}`, ws)
	s := startMCP(t, "/bin/bash")
	r := s.call(t, 1, "touch inside && echo in-ok; touch "+outside+"/x || echo out-denied", ws, profile, ws, 20000)
	if !strings.Contains(r.Output, "in-ok") || !strings.Contains(r.Output, "out-denied") {
		t.Fatalf("%+v", r)
	}
	if _, err := os.Stat(filepath.Join(outside, "x")); err == nil {
		t.Fatal("a write outside the workspace went through")
	}
}

// TestMCPShellWrapperReached: with the patched Bash under the sandbox,
// each program goes through our codex-execve-wrapper and the escalate
// socket (no rules: it runs in the sandbox).
func TestMCPShellWrapperReached(t *testing.T) {
	const bash = "/tmp/codex-shell-tool-mcp-0.97.0/node_modules/@openai/codex-shell-tool-mcp/vendor/x86_64-unknown-linux-musl/bash/debian-12/bash"
	if _, err := os.Stat(bash); err != nil {
		t.Skipf("patched Bash not installed: %v", err)
	}
	s := startMCPWith(t, nil, "--intercept", "wrapper", "--bash", bash)
	dir := t.TempDir()
	readOnly := `{"type":"managed","file_system":{"type":"restricted","entries":[{"path":{"type":"special","value":{"kind":"root"}},"access":"read"}]},"network":"restricted"}`
	r := s.call(t, 1, `echo "$BASH_EXEC_WRAPPER"; /usr/bin/basename /x/ok`, dir, readOnly, dir, 20000)
	lines := strings.Split(strings.TrimSpace(r.Output), "\n")
	if r.ExitCode != 0 || len(lines) != 2 || filepath.Base(lines[0]) != "codex-execve-wrapper" || lines[1] != "ok" {
		t.Fatalf("%+v", r)
	}
}
