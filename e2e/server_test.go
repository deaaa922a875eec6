package e2e

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// server is a running `codex exec-server` child.
type server struct {
	t      *testing.T
	cmd    *exec.Cmd
	URL    string
	stderr *lockedBuffer
	done   chan struct{}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startServer runs the binary with `exec-server --listen ws://127.0.0.1:0`
// and extra args, and returns once it printed its URL. The server is
// stopped with SIGTERM at the end of the test.
func startServer(t *testing.T, args ...string) *server {
	t.Helper()
	return startServerFrom(t, binary, args...)
}

// startServerFrom is startServer with the executable at bin.
func startServerFrom(t *testing.T, bin string, args ...string) *server {
	t.Helper()
	return startServerWith(t, bin, nil, args...)
}

// startServerWith is startServerFrom with setup, when not nil, applied to
// the command before it starts (credentials, environment).
func startServerWith(t *testing.T, bin string, setup func(*exec.Cmd), args ...string) *server {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"exec-server", "--listen", "ws://127.0.0.1:0", "--log-level", "debug"}, args...)...)
	cmd.Env = []string{raceEnv, "PATH=/usr/bin:/bin", "HOME=" + os.Getenv("HOME"), "CODEX_E2E_MARKER=1"}
	if setup != nil {
		setup(cmd)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &server{t: t, cmd: cmd, stderr: &lockedBuffer{}, done: make(chan struct{})}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1)
	rest := make(chan string, 1)
	go func() {
		r := bufio.NewReader(stdout)
		line, _ := r.ReadString('\n')
		lines <- line
		more, _ := io.ReadAll(r)
		rest <- string(more)
	}()
	go func() { _ = cmd.Wait(); close(s.done) }()
	select {
	case line := <-lines:
		s.URL = strings.TrimSpace(line)
	case <-time.After(20 * time.Second):
		t.Fatalf("server printed no URL; stderr:\n%s", s.stderr.String())
	}
	if !strings.HasPrefix(s.URL, "ws://127.0.0.1:") {
		t.Fatalf("first stdout line %q is not a ws URL; stderr:\n%s", s.URL, s.stderr.String())
	}
	// stderr is copied by another goroutine than the stdout reader: wait
	// for the listening line, so that every start-up line before it (the
	// cgroup mode, the metrics URL) is in the buffer for the test to read.
	s.waitStderr("exec-server listening", 5*time.Second)
	t.Cleanup(func() {
		s.stop()
		if extra := <-rest; extra != "" {
			t.Errorf("stdout carried more than the URL: %q", extra)
		}
		if t.Failed() {
			t.Logf("server stderr:\n%s", s.stderr.String())
		}
	})
	return s
}

// stop sends SIGTERM and waits for the exit, which must be status 0.
func (s *server) stop() {
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(15 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
		s.t.Errorf("server did not exit within 15 s of SIGTERM")
		return
	}
	if code := s.cmd.ProcessState.ExitCode(); code != 0 {
		s.t.Errorf("server exit status %d after SIGTERM, want 0", code)
	}
}

// client is a raw protocol client over a real WebSocket. It keeps every
// message it receives, so tests can assert exact shapes.
type client struct {
	t      *testing.T
	ws     *websocket.Conn
	ctx    context.Context
	cancel context.CancelFunc
	msgs   chan map[string]json.RawMessage
	closed chan error
	nextID int

	mu     sync.Mutex
	notifs []notification // every notification received so far, in order
	cond   *sync.Cond

	requests requestLog // command/exec* requests awaiting their response (schema_check_test.go)
}

type notification struct {
	Method string
	Params map[string]any
}

func dial(t *testing.T, url string, hdr map[string]string) *client {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	opts := &websocket.DialOptions{HTTPHeader: map[string][]string{}}
	for k, v := range hdr {
		opts.HTTPHeader.Set(k, v)
	}
	ws, _, err := websocket.Dial(ctx, url, opts)
	if err != nil {
		cancel()
		t.Fatalf("dial %s: %v", url, err)
	}
	ws.SetReadLimit(-1)
	c := &client{t: t, ws: ws, ctx: ctx, cancel: cancel, msgs: make(chan map[string]json.RawMessage, 1024), closed: make(chan error, 1), nextID: 1}
	c.cond = sync.NewCond(&c.mu)
	go c.readLoop()
	t.Cleanup(c.close)
	return c
}

func (c *client) close() {
	c.ws.Close(websocket.StatusNormalClosure, "")
	c.cancel()
}

func (c *client) readLoop() {
	for {
		typ, data, err := c.ws.Read(c.ctx)
		if err == nil && typ != websocket.MessageText {
			c.t.Errorf("server sent a %v frame; it must send text frames", typ)
		}
		if err != nil {
			c.closed <- err
			c.mu.Lock()
			c.notifs = append(c.notifs, notification{Method: "<closed>"})
			c.cond.Broadcast()
			c.mu.Unlock()
			close(c.msgs)
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(data, &m); err != nil {
			c.t.Errorf("server sent invalid JSON %q: %v", data, err)
			continue
		}
		if _, ok := m["jsonrpc"]; ok {
			c.t.Errorf("server sent a jsonrpc member: %s", data)
		}
		if _, isReq := m["method"]; isReq {
			var n notification
			_ = json.Unmarshal(m["method"], &n.Method)
			_ = json.Unmarshal(m["params"], &n.Params)
			c.mu.Lock()
			c.notifs = append(c.notifs, n)
			c.cond.Broadcast()
			c.mu.Unlock()
			continue
		}
		c.msgs <- m
	}
}

// sendRaw writes one text frame.
func (c *client) sendRaw(s string) {
	c.t.Helper()
	if err := c.ws.Write(c.ctx, websocket.MessageText, []byte(s)); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// send writes a request with the next id and returns the id.
func (c *client) send(method string, params any) int {
	c.t.Helper()
	id := c.nextID
	c.nextID++
	b, _ := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	c.requests.sent(fmt.Sprint(id), b)
	c.sendRaw(string(b))
	return id
}

// response is one response as received.
type response struct {
	ID     json.RawMessage
	Result json.RawMessage
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
}

// next returns the next response (not notification), failing after 10 s.
func (c *client) next() response {
	c.t.Helper()
	select {
	case m, ok := <-c.msgs:
		if !ok {
			c.t.Fatalf("connection closed while waiting for a response")
		}
		r := response{ID: m["id"], Result: m["result"]}
		if e, ok := m["error"]; ok {
			_ = json.Unmarshal(e, &r.Error)
		}
		var result json.RawMessage
		if r.Error == nil {
			result = r.Result
		}
		c.requests.answered(c.t, string(r.ID), result)
		return r
	case <-time.After(30 * time.Second): // a hang: a sandboxed fs/open has taken over 10 s at a load of 17
		c.t.Fatalf("no response within 30 s")
	}
	return response{}
}

// call sends a request and returns its response, which must carry its id.
func (c *client) call(method string, params any) response {
	c.t.Helper()
	id := c.send(method, params)
	r := c.next()
	if string(r.ID) != fmt.Sprint(id) {
		c.t.Fatalf("%s: response id %s, want %d", method, r.ID, id)
	}
	return r
}

// ok calls and decodes the result into out (may be nil); an error fails.
func (c *client) ok(method string, params any, out any) {
	c.t.Helper()
	r := c.call(method, params)
	if r.Error != nil {
		c.t.Fatalf("%s: error %d %s", method, r.Error.Code, r.Error.Message)
	}
	if out != nil {
		if err := json.Unmarshal(r.Result, out); err != nil {
			c.t.Fatalf("%s: decoding %s: %v", method, r.Result, err)
		}
	}
}

// fail calls and asserts an error with code and message (prefix when the
// message ends in "*").
func (c *client) fail(method string, params any, code int, msg string) {
	c.t.Helper()
	r := c.call(method, params)
	assertError(c.t, r, code, msg)
}

func assertError(t *testing.T, r response, code int, msg string) {
	t.Helper()
	if r.Error == nil {
		t.Fatalf("got result %s, want error %d %q", r.Result, code, msg)
	}
	match := r.Error.Message == msg
	if p, ok := strings.CutSuffix(msg, "*"); ok {
		match = strings.HasPrefix(r.Error.Message, p)
	}
	if r.Error.Code != code || !match {
		t.Fatalf("got error %d %q, want %d %q", r.Error.Code, r.Error.Message, code, msg)
	}
}

// resume sends initialize {resumeSessionId: sid} and returns the answer,
// sending it again while it is -32010 (for up to 10 s): the connection that
// held the session was closed just before, and nothing orders the server's
// reading of its end before this initialize. A failed initialize may be
// retried on the same connection (docs/protocol.md §5.1).
func (c *client) resume(sid string) response {
	c.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		r := c.call("initialize", map[string]any{"clientName": "e2e", "resumeSessionId": sid})
		if r.Error == nil || r.Error.Code != -32010 || time.Now().After(deadline) {
			return r
		}
	}
}

// handshake performs initialize + initialized and returns the session id.
func (c *client) handshake() string {
	c.t.Helper()
	var res struct {
		SessionID string `json:"sessionId"`
	}
	c.ok("initialize", map[string]any{"clientName": "e2e"}, &res)
	c.sendRaw(`{"method":"initialized","params":{}}`)
	return res.SessionID
}

// events returns the notifications of one process, waiting until its
// process/closed arrived (or the timeout passed).
func (c *client) events(processID string, timeout time.Duration) []notification {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	timer := time.AfterFunc(timeout, func() {
		c.mu.Lock()
		c.cond.Broadcast()
		c.mu.Unlock()
	})
	defer timer.Stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		var out []notification
		done := false
		for _, n := range c.notifs {
			if n.Method == "<closed>" {
				done = true
			}
			if n.Params["processId"] != processID {
				continue
			}
			out = append(out, n)
			if n.Method == "process/closed" {
				done = true
			}
		}
		if done || time.Now().After(deadline) {
			return out
		}
		c.cond.Wait()
	}
}

// output concatenates the decoded output chunks of events and checks that
// the seqs are dense from 1, that exited precedes closed and that nothing
// follows closed. It returns the output and the exit code.
func checkEvents(t *testing.T, evs []notification) (string, int) {
	t.Helper()
	var out strings.Builder
	code := -1000
	for i, n := range evs {
		seq := int(n.Params["seq"].(float64))
		if seq != i+1 {
			t.Fatalf("event %d (%s) has seq %d; seqs must be dense from 1", i, n.Method, seq)
		}
		switch n.Method {
		case "process/output":
			b, err := base64.StdEncoding.DecodeString(n.Params["chunk"].(string))
			if err != nil {
				t.Fatalf("bad base64 chunk: %v", err)
			}
			out.Write(b)
		case "process/exited":
			code = int(n.Params["exitCode"].(float64))
			if n.Params["sandboxDenied"] != false {
				t.Fatalf("sandboxDenied = %v for an unsandboxed process", n.Params["sandboxDenied"])
			}
		case "process/closed":
			if i != len(evs)-1 {
				t.Fatalf("events after process/closed: %v", evs[i+1:])
			}
			if code == -1000 {
				t.Fatalf("process/closed before process/exited")
			}
		}
	}
	if len(evs) == 0 || evs[len(evs)-1].Method != "process/closed" {
		t.Fatalf("no process/closed; events: %v", evs)
	}
	return out.String(), code
}

// startParams builds minimal process/start params.
func startParams(id string, argv ...string) map[string]any {
	return map[string]any{"processId": id, "argv": argv, "cwd": "file:///tmp", "env": map[string]string{"PATH": "/usr/bin:/bin"}, "tty": false}
}

// run starts a process and returns its output and exit code once closed.
func (c *client) run(id string, params map[string]any) (string, int) {
	c.t.Helper()
	c.ok("process/start", params, nil)
	return checkEvents(c.t, c.events(id, 20*time.Second))
}

// waitStderr waits up to d for substr in the server's stderr and reports
// whether it came.
func (s *server) waitStderr(substr string, d time.Duration) bool {
	for end := time.Now().Add(d); ; time.Sleep(5 * time.Millisecond) {
		if strings.Contains(s.stderr.String(), substr) {
			return true
		}
		if time.Now().After(end) {
			return false
		}
	}
}
