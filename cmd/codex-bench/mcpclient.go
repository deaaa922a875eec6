package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// MCPServer is one running MCP `shell` server (ours or the 0.97.0
// reference) with a line-oriented stdio client. Calls are sequential: one
// goroutine at a time may use it. Close stops the process and waits for it.
type MCPServer struct {
	Label string
	Argv  []string
	ws    string // the workspace: workdir and sandboxCwd of every call

	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  *bufio.Scanner
	nextID int
}

// mcpReply is a JSON-RPC response (or a request from the server).
type mcpReply struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// StartMCP starts argv with a short environment (PATH, HOME, CODEX_HOME
// with rules as rules/default.rules, CODEX_BASH_PATH=bash) in dir, and
// completes initialize and a read-only codex/sandbox-state/update (with
// sandboxExe as codexLinuxSandboxExe when not empty). Errors name the step.
func StartMCP(ctx context.Context, label string, argv []string, dir, rules, bash, sandboxExe string) (*MCPServer, error) {
	home, codexHome, ws := filepath.Join(dir, "home"), filepath.Join(dir, "codex-home"), filepath.Join(dir, "ws")
	for _, d := range []string{home, filepath.Join(codexHome, "rules"), ws} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(codexHome, "rules", "default.rules"), []byte(rules), 0o644); err != nil {
		return nil, err
	}
	errFile, err := os.Create(filepath.Join(dir, "server.stderr"))
	if err != nil {
		return nil, err
	}
	defer errFile.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "CODEX_HOME=" + codexHome, "CODEX_BASH_PATH=" + bash}
	cmd.Stderr = errFile
	stdin, stdout, err := startPiped(cmd)
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	s := &MCPServer{Label: label, Argv: argv, ws: ws, cmd: cmd, stdin: stdin, lines: sc}
	if err := s.handshake(ctx, sandboxExe); err != nil {
		s.Close()
		return nil, fmt.Errorf("%s: %w (stderr: %s)", label, err, filepath.Join(dir, "server.stderr"))
	}
	return s, nil
}

func (s *MCPServer) handshake(ctx context.Context, sandboxExe string) error {
	if _, err := s.request(ctx, "initialize", map[string]any{"protocolVersion": "2025-06-18",
		"capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "bench", "version": "1"}}); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	if _, err := io.WriteString(s.stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		return err
	}
	var exe any
	if sandboxExe != "" {
		exe = sandboxExe
	}
	_, err := s.request(ctx, "codex/sandbox-state/update", map[string]any{
		"sandboxPolicy": map[string]any{"type": "read-only"}, "sandboxCwd": s.ws,
		"codexLinuxSandboxExe": exe, "useLinuxSandboxBwrap": false})
	if err != nil {
		return fmt.Errorf("codex/sandbox-state/update: %w", err)
	}
	return nil
}

// request sends one request and reads lines until its response. A request
// from the server (an elicitation) is an error: the bench's rules never
// prompt. The context's deadline is not enforced on a blocked read; the
// caller closes the server to unblock it.
func (s *MCPServer) request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.nextID++
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": s.nextID, "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	if _, err := s.stdin.Write(append(b, '\n')); err != nil {
		return nil, fatal(err)
	}
	want := fmt.Sprint(s.nextID)
	for s.lines.Scan() {
		var m mcpReply
		if err := json.Unmarshal(s.lines.Bytes(), &m); err != nil {
			return nil, fmt.Errorf("bad line %q: %w", s.lines.Bytes(), err)
		}
		switch {
		case m.Method != "":
			return nil, fmt.Errorf("unexpected message from the server: %s", s.lines.Bytes())
		case string(m.ID) != want:
			continue
		case m.Error != nil:
			return nil, fmt.Errorf("%s: error %d: %s", method, m.Error.Code, m.Error.Message)
		default:
			return m.Result, nil
		}
	}
	return nil, fatal(errors.New("server closed stdout"))
}

// Shell runs one non-login `shell` call in the workspace and returns its
// wall time, measured here around the request, after checking the result
// (exit code 0, output want).
func (s *MCPServer) Shell(ctx context.Context, command, want string) (time.Duration, error) {
	t0 := time.Now()
	res, err := s.request(ctx, "tools/call", map[string]any{"name": "shell", "arguments": map[string]any{
		"command": command, "workdir": s.ws, "login": false, "timeout_ms": 120000}})
	d := time.Since(t0)
	if err != nil {
		return 0, err
	}
	var r struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	var out struct {
		ExitCode int    `json:"exit_code"`
		Output   string `json:"output"`
	}
	if err := json.Unmarshal(res, &r); err != nil || len(r.Content) != 1 {
		return 0, fmt.Errorf("result is not one text item: %s", res)
	}
	if err := json.Unmarshal([]byte(r.Content[0].Text), &out); err != nil {
		return 0, fmt.Errorf("result text: %w", err)
	}
	if out.ExitCode != 0 || out.Output != want {
		return 0, fmt.Errorf("%q: exit %d, output %q, want 0 and %q", command, out.ExitCode, out.Output, want)
	}
	return d, nil
}

// Close ends the server: stdin EOF, then SIGKILL to its process group after
// 5 s; it waits for the process.
func (s *MCPServer) Close() {
	_ = s.stdin.Close()
	done := make(chan struct{})
	go func() {
		_ = s.cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}
