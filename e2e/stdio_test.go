package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// stdioServer runs `codex exec-server --listen stdio`.
type stdioServer struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string

	requests requestLog // requests awaiting their response (schema_check_test.go)
}

func startStdio(t *testing.T, args ...string) *stdioServer {
	t.Helper()
	return startStdioEnv(t, nil, args...)
}

// startStdioEnv is startStdio with env added to the server's environment.
func startStdioEnv(t *testing.T, env []string, args ...string) *stdioServer {
	t.Helper()
	return startStdioWith(t, binary, func(cmd *exec.Cmd) { cmd.Env = append(cmd.Env, env...) }, args...)
}

// startStdioWith starts bin as a stdio server after setup changed its
// command (nil: none).
func startStdioWith(t *testing.T, bin string, setup func(*exec.Cmd), args ...string) *stdioServer {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"exec-server", "--listen", "stdio"}, args...)...)
	cmd.Env = []string{raceEnv, "PATH=/usr/bin:/bin"}
	if setup != nil {
		setup(cmd)
	}
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &stdioServer{cmd: cmd, in: in, lines: make(chan string, 100)}
	var mu sync.Mutex
	ended := false // the test is over: t must not be used
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 64<<20) // an fs/walk answer may be 4 MiB and more
		for sc.Scan() {
			mu.Lock()
			if !ended {
				s.requests.answeredLine(t, sc.Bytes())
			}
			mu.Unlock()
			s.lines <- sc.Text()
		}
		close(s.lines)
	}()
	t.Cleanup(func() {
		mu.Lock()
		ended = true
		mu.Unlock()
		in.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Errorf("stdio server did not exit on stdin EOF")
		}
	})
	return s
}

func (s *stdioServer) send(t *testing.T, line string) {
	t.Helper()
	s.requests.sentLines(line)
	if _, err := io.WriteString(s.in, line); err != nil {
		t.Fatal(err)
	}
}

func (s *stdioServer) recv(t *testing.T) map[string]any {
	t.Helper()
	select {
	case l, ok := <-s.lines:
		if !ok {
			t.Fatal("stdout closed")
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("stdout line %q is not JSON", l)
		}
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no line on stdout")
	}
	return nil
}

func TestStdioTransport(t *testing.T) {
	s := startStdio(t)
	s.send(t, "\n{bad\r\n")
	m := s.recv(t)
	if m["id"] != float64(-1) || !strings.HasPrefix(m["error"].(map[string]any)["message"].(string), "failed to parse JSON-RPC message from exec-server stdio: ") {
		t.Fatalf("parse error: %v", m)
	}
	s.send(t, `{"id":1,"method":"initialize","params":{"clientName":"x"}}`+"\r\n"+`{"method":"initialized"}`+"\n")
	if m = s.recv(t); m["id"] != float64(1) || m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	s.send(t, `{"id":2,"method":"process/start","params":{"processId":"p","argv":["/bin/echo","hi"],"cwd":"/tmp","env":{},"tty":false}}`+"\n")
	var methods []string
	for len(methods) == 0 || methods[len(methods)-1] != "process/closed" {
		m = s.recv(t)
		if meth, ok := m["method"].(string); ok {
			methods = append(methods, meth)
		} else if m["id"] != float64(2) || len(methods) != 0 {
			t.Fatalf("start response %v after %v", m, methods)
		} else {
			methods = append(methods, "response")
		}
	}
	// The answer comes first and closed last; exited may precede the
	// output it raced with (docs/protocol.md §6.10).
	got := strings.Join(methods, ",")
	if got != "response,process/output,process/exited,process/closed" && got != "response,process/exited,process/output,process/closed" {
		t.Fatalf("order %v", methods)
	}
}

func TestStdioOversizeLine(t *testing.T) {
	s := startStdio(t, "--max-message-bytes", "100")
	s.send(t, `{"id":1,"method":"initialize","params":{"clientName":"`+strings.Repeat("x", 200)+`"}}`+"\n")
	m := s.recv(t)
	if m["id"] != float64(-1) || m["error"].(map[string]any)["code"] != float64(-32600) {
		t.Fatalf("oversize: %v", m)
	}
	select {
	case _, ok := <-s.lines:
		if ok {
			t.Fatal("more output after the oversize error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("stdio connection did not end")
	}
}

// TestStdioEOFKillsProcesses: after the end of a stdio server's input
// its processes, a setsid'd descendant too, end once the grace has passed
// (shortened from the 5 s default: the default's length is not what this
// test looks at).
func TestStdioEOFKillsProcesses(t *testing.T) {
	s := startStdio(t, "--shutdown-grace", "300ms")
	s.send(t, `{"id":1,"method":"initialize","params":{"clientName":"x"}}`+"\n"+`{"method":"initialized"}`+"\n")
	s.recv(t)
	s.send(t, `{"id":2,"method":"process/start","params":{"processId":"p","argv":["/bin/sh","-c","setsid sleep 1000 >/dev/null 2>&1 & echo pid=$!; exec sleep 1000"],"cwd":"/tmp","env":{"PATH":"/usr/bin:/bin"},"tty":false}}`+"\n")
	pid := 0
	for pid == 0 {
		m := s.recv(t)
		if m["method"] == "process/output" {
			var out string
			b, _ := json.Marshal(m["params"].(map[string]any)["chunk"])
			var chunk []byte
			_ = json.Unmarshal(b, &chunk)
			out = strings.TrimSpace(string(chunk))
			if v, ok := strings.CutPrefix(out, "pid="); ok {
				pid = atoi(v)
			}
		}
	}
	s.in.Close()
	waitGone(t, pid)
}

func atoi(s string) int {
	n := 0
	for _, r := range s {
		n = n*10 + int(r-'0')
	}
	return n
}
