package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"
)

// pid1Server is `codex exec-server --listen stdio` running as PID 1 of a
// new PID namespace with its own /proc (unshare --fork --pid
// --mount-proc), as in a container. It speaks stdio because the
// WebSocket peer check maps a local peer's socket to its process through
// /proc, which in the namespace does not show the test: a local client
// from another PID namespace is refused (a remote one is not).
type pid1Server struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	stderr *lockedBuffer
	resps  chan map[string]json.RawMessage
	done   chan struct{}
	nextID int

	mu     sync.Mutex
	cond   *sync.Cond
	notifs []notification
	eof    bool
}

// startAsPID1 starts the server in the namespaces, or skips where they are
// not permitted. The server ends at the end of the test (stdin EOF) and
// must exit with 0.
func startAsPID1(t *testing.T) *pid1Server {
	t.Helper()
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("unshare (util-linux) is not installed: cannot run the server as PID 1 of a PID namespace")
	}
	if out, err := exec.Command(unshare, "--fork", "--pid", "--mount-proc", "true").CombinedOutput(); err != nil {
		t.Skipf("new PID and mount namespaces are not permitted here: %v: %s", err, out)
	}
	cmd := exec.Command(unshare, "--fork", "--pid", "--mount-proc", "--kill-child",
		binary, "exec-server", "--listen", "stdio", "--log-level", "debug")
	cmd.Env = []string{raceEnv, "PATH=/usr/bin:/bin"}
	s := &pid1Server{t: t, cmd: cmd, stderr: &lockedBuffer{}, resps: make(chan map[string]json.RawMessage, 64), done: make(chan struct{}), nextID: 1}
	s.cond = sync.NewCond(&s.mu)
	cmd.Stderr = s.stderr
	s.in, _ = cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go s.readLoop(out)
	go func() { _ = cmd.Wait(); close(s.done) }()
	t.Cleanup(s.stop)
	var res map[string]any
	s.ok("initialize", map[string]any{"clientName": "e2e"}, &res)
	s.write(map[string]any{"method": "initialized", "params": map[string]any{}})
	return s
}

// stop sends SIGTERM to the server, as a container runtime stops PID 1
// (unshare forwards no signal, so it goes to unshare's child), and checks
// that it exits with 0.
func (s *pid1Server) stop() {
	if kids := children(s.cmd.Process.Pid); len(kids) == 1 {
		_ = syscall.Kill(atoi(kids[0]), syscall.SIGTERM)
	} else {
		s.t.Errorf("unshare has children %v, want the server alone", kids)
		_ = s.in.Close()
	}
	select {
	case <-s.done:
		if code := s.cmd.ProcessState.ExitCode(); code != 0 {
			s.t.Errorf("PID 1 server exit status %d after SIGTERM, want 0", code)
		}
	case <-time.After(15 * time.Second):
		_ = s.cmd.Process.Kill() // unshare --kill-child takes the server along
		<-s.done
		s.t.Errorf("PID 1 server did not exit within 15 s of SIGTERM")
	}
	_ = s.in.Close()
	if s.t.Failed() {
		s.t.Logf("server stderr:\n%s", s.stderr.String())
	}
}

// readLoop sorts stdout lines into responses and notifications.
func (s *pid1Server) readLoop(out io.Reader) {
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			s.t.Errorf("stdout line %q is not JSON", sc.Text())
			continue
		}
		if _, ok := m["method"]; !ok {
			s.resps <- m
			continue
		}
		var n notification
		_ = json.Unmarshal(m["method"], &n.Method)
		_ = json.Unmarshal(m["params"], &n.Params)
		s.mu.Lock()
		s.notifs = append(s.notifs, n)
		s.cond.Broadcast()
		s.mu.Unlock()
	}
	s.mu.Lock()
	s.eof = true
	s.cond.Broadcast()
	s.mu.Unlock()
	close(s.resps)
}

// write sends one message line.
func (s *pid1Server) write(msg map[string]any) {
	b, _ := json.Marshal(msg)
	if _, err := s.in.Write(append(b, '\n')); err != nil {
		s.t.Fatalf("writing to the server: %v", err)
	}
}

// ok calls method and decodes its result into out (may be nil); an error
// response fails the test. Calls are made one at a time.
func (s *pid1Server) ok(method string, params, out any) {
	s.t.Helper()
	id := s.nextID
	s.nextID++
	s.write(map[string]any{"id": id, "method": method, "params": params})
	select {
	case m, open := <-s.resps:
		if !open {
			s.t.Fatalf("%s: the server closed stdout", method)
		}
		if string(m["id"]) != fmt.Sprint(id) || m["error"] != nil {
			s.t.Fatalf("%s: response %v, want a result for id %d", method, m, id)
		}
		if out != nil {
			if err := json.Unmarshal(m["result"], out); err != nil {
				s.t.Fatal(err)
			}
		}
	case <-time.After(10 * time.Second):
		s.t.Fatalf("%s: no response within 10 s", method)
	}
}

// events returns the notifications of one process once its process/closed
// arrived, or what there is after timeout.
func (s *pid1Server) events(processID string, timeout time.Duration) []notification {
	deadline := time.Now().Add(timeout)
	timer := time.AfterFunc(timeout, func() {
		s.mu.Lock()
		s.cond.Broadcast()
		s.mu.Unlock()
	})
	defer timer.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		var out []notification
		closed := false
		for _, n := range s.notifs {
			if n.Params["processId"] == processID {
				out = append(out, n)
				closed = closed || n.Method == "process/closed"
			}
		}
		if closed || s.eof || time.Now().After(deadline) {
			return out
		}
		s.cond.Wait()
	}
}

// run starts a process and returns its output and exit code once closed.
func (s *pid1Server) run(id string, params map[string]any) (string, int) {
	s.t.Helper()
	s.ok("process/start", params, nil)
	return checkEvents(s.t, s.events(id, 20*time.Second))
}
