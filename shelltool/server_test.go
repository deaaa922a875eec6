package shelltool

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codexec/codex/execpolicy"
	"github.com/codexec/codex/sandbox"
	"github.com/codexec/codex/shelltool/escalate"
)

// fakeRunner records the calls it is given and answers with run.
type fakeRunner struct {
	mu    sync.Mutex
	calls []*Call
	run   func(ctx context.Context, c *Call) (Result, error)
}

func (f *fakeRunner) Run(ctx context.Context, c *Call) (Result, error) {
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.mu.Unlock()
	if f.run != nil {
		return f.run(ctx, c)
	}
	return Result{ExitCode: 3, Output: "hi\n<&>\n", Duration: 1500 * time.Millisecond}, nil
}

func (f *fakeRunner) last(t *testing.T) *Call {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.calls) == 0 {
		t.Fatal("no call reached the runner")
	}
	return f.calls[len(f.calls)-1]
}

// client is the test's end of an in-memory MCP connection.
type client struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *bufio.Reader
	done chan struct{} // closed when Serve returned
}

// startServer runs Serve over pipes with cfg (Evaluate and Runner
// defaulted) and returns the client end. Cleanup closes the input and
// waits for Serve.
func startServer(t *testing.T, cfg Config) *client {
	t.Helper()
	if cfg.Evaluate == nil {
		cfg.Evaluate = func([]string) (execpolicy.Decision, bool) { return execpolicy.Allow, false }
	}
	if cfg.Runner == nil {
		cfg.Runner = &fakeRunner{}
	}
	cfg.Name, cfg.Version = "codex-test", "9.9.9"
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &client{t: t, in: inW, out: bufio.NewReader(outR), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		if err := Serve(context.Background(), inR, outW, inR, cfg); err != nil {
			t.Errorf("Serve: %v", err)
		}
		outW.Close()
	}()
	t.Cleanup(func() {
		inW.Close()
		go io.Copy(io.Discard, outR) // drain final answers
		select {
		case <-c.done:
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return after EOF")
		}
	})
	return c
}

func (c *client) send(lines ...string) {
	c.t.Helper()
	for _, l := range lines {
		if _, err := io.WriteString(c.in, l+"\n"); err != nil {
			c.t.Fatal(err)
		}
	}
}

func (c *client) recv() string {
	c.t.Helper()
	type line struct {
		s   string
		err error
	}
	ch := make(chan line, 1)
	go func() {
		s, err := c.out.ReadString('\n')
		ch <- line{s, err}
	}()
	select {
	case l := <-ch:
		if l.err != nil {
			c.t.Fatalf("reading: %v", l.err)
		}
		return strings.TrimSuffix(l.s, "\n")
	case <-time.After(10 * time.Second):
		c.t.Fatal("no message from the server")
	}
	return ""
}

// expect sends a request and checks the answer's bytes.
func (c *client) expect(req, want string) {
	c.t.Helper()
	c.send(req)
	if got := c.recv(); got != want {
		c.t.Errorf("%s\n got %s\nwant %s", req, got, want)
	}
}

const initReq = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

func (c *client) initialize() {
	c.t.Helper()
	c.send(initReq)
	c.recv()
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

func TestInitialize(t *testing.T) {
	c := startServer(t, Config{})
	c.expect(initReq, `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"experimental":{"codex/sandbox-state":{"version":"1.0.0"}},"tools":{}},"serverInfo":{"name":"codex-test","version":"9.9.9"},"instructions":"This server provides a tool to execute shell commands and return their output."}}`)
	for _, v := range []struct{ sent, want string }{{"2024-11-05", "2024-11-05"}, {"2099-01-01", "2025-06-18"}} {
		c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + v.sent + `","capabilities":{}}}`)
		if got := c.recv(); !strings.Contains(got, `"protocolVersion":"`+v.want+`"`) {
			t.Errorf("client %s: %s", v.sent, got)
		}
	}
}

func TestToolsListGolden(t *testing.T) {
	golden, err := os.ReadFile("testdata/tools_list.golden.json")
	if err != nil {
		t.Fatal(err)
	}
	c := startServer(t, Config{})
	c.initialize()
	c.expect(`{"jsonrpc":"2.0","id":"l","method":"tools/list"}`, `{"jsonrpc":"2.0","id":"l","result":`+string(golden)+`}`)
}

func TestProtocolErrors(t *testing.T) {
	c := startServer(t, Config{})
	c.expect(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, `{"jsonrpc":"2.0","error":{"code":-32600,"message":"invalid request: tools/list before initialize"},"id":1}`)
	c.expect(`{"jsonrpc":"2.0","id":2,"method":"ping"}`, `{"jsonrpc":"2.0","id":2,"result":{}}`)
	c.initialize()
	for _, tc := range []struct{ req, want string }{
		{`{oops`, `{"jsonrpc":"2.0","error":{"code":-32700,"message":"parse error: invalid character 'o' looking for beginning of object key string"},"id":null}`},
		{`{"id":3,"method":"ping"}`, `{"jsonrpc":"2.0","error":{"code":-32600,"message":"invalid request: \"jsonrpc\" must be \"2.0\""},"id":3}`},
		{`[]`, `{"jsonrpc":"2.0","error":{"code":-32600,"message":"invalid request: batches are not supported"},"id":null}`},
		{`{"jsonrpc":"2.0","id":4,"method":"foo/bar"}`, `{"jsonrpc":"2.0","error":{"code":-32601,"message":"foo/bar"},"id":4}`},
		{`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"nope","arguments":{}}}`, `{"jsonrpc":"2.0","error":{"code":-32602,"message":"tool not found"},"id":5}`},
		{`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"shell","arguments":{}}}`, `{"jsonrpc":"2.0","error":{"code":-32602,"message":"failed to deserialize parameters: missing field ` + "`command`" + `"},"id":6}`},
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"shell","arguments":{"command":"x","workdir":"/nonexistent-wd"}}}`, `{"jsonrpc":"2.0","error":{"code":-32603,"message":"No such file or directory (os error 2)"},"id":7}`},
		{`{"jsonrpc":"2.0","id":8,"method":"codex/sandbox-state/update"}`, `{"jsonrpc":"2.0","error":{"code":-32602,"message":"missing params for sandbox state request"},"id":8}`},
		{`{"jsonrpc":"2.0","id":9,"method":"codex/sandbox-state/update","params":{"sandboxPolicy":{"type":"read-only"}}}`, `{"jsonrpc":"2.0","error":{"code":-32602,"message":"failed to deserialize sandbox state","data":{"sandboxPolicy":{"type":"read-only"}}},"id":9}`},
		{`{"jsonrpc":"2.0","id":10,"method":"codex/sandbox-state/update","params":{"sandboxPolicy":{"type":"read-only"},"sandboxCwd":"/","codexLinuxSandboxExe":5}}`, `{"jsonrpc":"2.0","error":{"code":-32602,"message":"failed to deserialize sandbox state","data":{"sandboxPolicy":{"type":"read-only"},"sandboxCwd":"/","codexLinuxSandboxExe":5}},"id":10}`},
		{`{"jsonrpc":"2.0","id":11,"method":"ping"}`, `{"jsonrpc":"2.0","id":11,"result":{}}`},
	} {
		c.expect(tc.req, tc.want)
	}
}

// TestCallResultBytes: the result of docs/shell-tool.md §3.3, isError false for a
// non-zero exit, nothing HTML-escaped.
func TestCallResultBytes(t *testing.T) {
	c := startServer(t, Config{})
	c.initialize()
	dir := t.TempDir()
	c.expect(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell","arguments":{"command":"echo hi","workdir":"`+dir+`"}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\"exit_code\":3,\"output\":\"hi\\n<&>\\n\",\"duration\":{\"secs\":1,\"nanos\":500000000},\"timed_out\":false}"}],"isError":false}}`)
}

// TestCallDefaults: login and timeout defaults, relative workdir against
// the server's cwd, the read-only default sandbox with the workdir as
// policy cwd.
func TestCallDefaults(t *testing.T) {
	base := t.TempDir()
	if err := os.Mkdir(filepath.Join(base, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := &fakeRunner{}
	c := startServer(t, Config{Runner: r, Cwd: base})
	c.initialize()
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell","arguments":{"command":"x","workdir":"sub","login":null}}}`)
	c.recv()
	call := r.last(t)
	if call.Workdir != filepath.Join(base, "sub") || !call.Login || call.Stopwatch.limit != DefaultTimeout {
		t.Errorf("call %+v", call)
	}
	requireSandboxPlan(t, call.Plan)
	if !call.Plan.ReadOnlyRoot || len(call.Plan.WritableRoots) != 0 {
		t.Errorf("default plan is not read-only: %+v", call.Plan)
	}
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"shell","arguments":{"command":"x","workdir":"/","login":false,"timeout_ms":0}}}`)
	c.recv()
	if call := r.last(t); call.Login || call.Stopwatch.limit != 0 {
		t.Errorf("login false, timeout 0: %+v", call)
	}
}

// requireSandboxPlan skips when the kernel cannot sandbox (plans then
// fail), and fails when plan is nil.
func requireSandboxPlan(t *testing.T, plan *sandbox.Plan) {
	t.Helper()
	if err := sandbox.Available(); err != nil {
		t.Skipf("no sandbox: %v", err)
	}
	if plan == nil {
		t.Fatal("no sandbox plan")
	}
}

func writable(p *sandbox.Plan, dir string) bool {
	for _, r := range p.WritableRoots {
		if r.Path == dir {
			return true
		}
	}
	return false
}

// TestSandboxStateUpdateThenCall: a tools/call sent right after an update
// runs under the updated policy (the update is processed inline), and the
// per-call _meta state of Codex 0.169.0 wins over it.
func TestSandboxStateUpdateThenCall(t *testing.T) {
	ws := canonical(t, t.TempDir())
	other := canonical(t, t.TempDir())
	r := &fakeRunner{}
	c := startServer(t, Config{Runner: r})
	c.initialize()
	c.send(`{"jsonrpc":"2.0","id":"req-42","method":"codex/sandbox-state/update","params":{"sandboxPolicy":{"type":"workspace-write","writable_roots":["`+other+`"],"network_access":false,"exclude_tmpdir_env_var":false,"exclude_slash_tmp":false},"sandboxCwd":"`+ws+`","codexLinuxSandboxExe":null,"useLinuxSandboxBwrap":false}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell","arguments":{"command":"x","workdir":"/"}}}`)
	if got := c.recv(); got != `{"jsonrpc":"2.0","id":"req-42","result":{}}` {
		t.Fatalf("update: %s", got)
	}
	c.recv()
	p := r.last(t).Plan
	requireSandboxPlan(t, p)
	if !writable(p, ws) || !writable(p, other) || writable(p, "/") {
		t.Errorf("update not applied: %+v", p.WritableRoots)
	}

	// The v2 spelling, accepted as our extension.
	c.expect(`{"jsonrpc":"2.0","id":2,"method":"codex/sandbox-state/update","params":{"sandboxPolicy":{"type":"dangerFullAccess"},"sandboxCwd":"`+ws+`"}}`, `{"jsonrpc":"2.0","id":2,"result":{}}`)
	c.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"shell","arguments":{"command":"x","workdir":"/"}}}`)
	c.recv()
	if p := r.last(t).Plan; p != nil {
		t.Errorf("danger-full-access has a plan: %+v", p)
	}

	// Per-call _meta wins over the update (danger-full-access here).
	meta := `{"codex/sandbox-state":{"permissionProfile":{"type":"managed","file_system":{"type":"restricted","entries":[{"path":{"type":"special","value":{"kind":"root"}},"access":"read"},{"path":{"type":"path","path":"` + other + `"},"access":"write"},{"path":{"type":"special","value":{"kind":"slash_tmp"}},"access":"write"},{"path":{"type":"special","value":{"kind":"tmpdir"}},"access":"write"},{"path":{"type":"path","path":"` + other + `/.git"},"access":"read","missing_path_behavior":"skip"}]},"network":"restricted"},"codexLinuxSandboxExe":"/opt/codex","sandboxCwd":"file://` + other + `","useLegacyLandlock":false,"useMxc":false},"codex/sandbox-state-meta":{},"codex/sandbox-launcher":{"codexExecutable":"/opt/codex"}}`
	c.send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"shell","arguments":{"command":"x","workdir":"/"},"_meta":` + meta + `}}`)
	c.recv()
	p = r.last(t).Plan
	requireSandboxPlan(t, p)
	if !writable(p, other) || writable(p, ws) || !p.NetworkDisabled {
		t.Errorf("_meta state not applied: %+v", p)
	}
	c.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"shell","arguments":{"command":"x","workdir":"/"},"_meta":{"codex/sandbox-state":{"permissionProfile":{"type":"disabled"},"sandboxCwd":"file:///"}}}}`)
	c.recv()
	if p := r.last(t).Plan; p != nil {
		t.Errorf("disabled has a plan: %+v", p)
	}
	c.expect(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"shell","arguments":{"command":"x","workdir":"/"},"_meta":{"codex/sandbox-state":{"permissionProfile":{"type":"bogus"},"sandboxCwd":"file:///"}}}}`,
		`{"jsonrpc":"2.0","error":{"code":-32602,"message":"failed to deserialize codex/sandbox-state: unknown permission profile type `+"`bogus`"+`"},"id":6}`)
}

func canonical(t *testing.T, p string) string {
	t.Helper()
	c, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCancelledAndEOF: notifications/cancelled cancels the call's context
// and the call is never answered; stdin EOF cancels every running call and
// Serve returns.
func TestCancelledAndEOF(t *testing.T) {
	started := make(chan struct{}, 2)
	ended := make(chan struct{}, 2)
	r := &fakeRunner{run: func(ctx context.Context, c *Call) (Result, error) {
		started <- struct{}{}
		<-ctx.Done()
		ended <- struct{}{}
		return Result{ExitCode: 137}, nil
	}}
	c := startServer(t, Config{Runner: r})
	c.initialize()
	c.send(`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"shell","arguments":{"command":"x","workdir":"/"}}}`)
	<-started
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a","reason":"user"}}`)
	<-ended
	c.send(`{"jsonrpc":"2.0","id":"p","method":"ping"}`)
	if got := c.recv(); got != `{"jsonrpc":"2.0","id":"p","result":{}}` {
		t.Fatalf("after the cancelled call, want the ping's answer, got: %s", got)
	}
	c.send(`{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"shell","arguments":{"command":"x","workdir":"/"}}}`)
	<-started
	go io.Copy(io.Discard, c.out) // the final answers must not block Serve
	c.in.Close()
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return at EOF with a call running")
	}
}

// TestElicitation: a prompt asks the client with the exact request of
// docs/shell-tool.md §7.6 (ids from 0, progressToken = id) and follows the answer; a
// client without the capability is never asked.
func TestElicitation(t *testing.T) {
	got := make(chan escalate.Decision, 1)
	r := &fakeRunner{run: func(ctx context.Context, c *Call) (Result, error) {
		got <- c.Decider.Decide(ctx, escalate.Request{File: "/usr/bin/cat", Argv: []string{"cat", "/etc/hostname", "a&b"}, Workdir: "/tmp"})
		return Result{}, nil
	}}
	prompt := func([]string) (execpolicy.Decision, bool) { return execpolicy.Prompt, true }
	esc := &EscalationPolicy{Dirs: TrustedPathDirs("/usr/bin:/bin")}
	c := startServer(t, Config{Runner: r, Evaluate: prompt, Escalation: esc})
	c.send(`{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{"form":{},"url":{}}}}}`)
	c.recv()
	call := `{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"shell","arguments":{"command":"cat /etc/hostname","workdir":"/"}}}`
	for i, answer := range []string{"accept", "decline"} {
		c.send(call)
		id := string(rune('0' + i))
		want := `{"jsonrpc":"2.0","id":` + id + `,"method":"elicitation/create","params":{"_meta":{"progressToken":` + id + `},"message":"Allow agent to run ` + "`/usr/bin/cat /etc/hostname 'a&b'` in `/tmp`" + `?","requestedSchema":{"type":"object","title":"Execution Permission Request","properties":{"reason":{"type":"string","description":"Optional reason for allowing or denying execution"}}}}}`
		if req := c.recv(); req != want {
			t.Fatalf("elicitation\n got %s\nwant %s", req, want)
		}
		c.send(`{"jsonrpc":"2.0","id":` + id + `,"result":{"action":"` + answer + `","content":{}}}`)
		d := <-got
		if (answer == "accept") != (d.Action == escalate.Escalate) {
			t.Errorf("%s: %+v", answer, d)
		}
		d.Close()
		c.recv()
	}

	c2 := startServer(t, Config{Runner: r, Evaluate: prompt})
	c2.initialize() // no elicitation capability
	c2.send(call)
	if d := <-got; d.Action != escalate.Deny || *d.Reason != reasonDeclined {
		t.Errorf("without the capability: %+v", d)
	}
	if res := c2.recv(); !strings.Contains(res, `"id":"c","result"`) {
		t.Errorf("expected the result and no elicitation: %s", res)
	}
}

// TestCallTimeoutCloses: the stopwatch the runner gets closes Expired at
// the limit.
func TestCallTimeoutCloses(t *testing.T) {
	r := &fakeRunner{run: func(ctx context.Context, c *Call) (Result, error) {
		c.Stopwatch.Start()
		defer c.Stopwatch.Stop()
		select {
		case <-c.Expired:
			return Result{ExitCode: 124, TimedOut: true}, nil
		case <-time.After(10 * time.Second):
			return Result{}, nil
		}
	}}
	c := startServer(t, Config{Runner: r})
	c.initialize()
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell","arguments":{"command":"x","workdir":"/","timeout_ms":30}}}`)
	var res struct {
		Result struct {
			Content []struct{ Text string } `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(c.recv()), &res); err != nil || !strings.Contains(res.Result.Content[0].Text, `"timed_out":true`) {
		t.Fatalf("%v %+v", err, res)
	}
}
