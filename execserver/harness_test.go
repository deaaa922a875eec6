package execserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codexec/codex/rpc"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// testServer is a Registry and Binder whose logs are observed.
type testServer struct {
	reg  *Registry
	bind *Binder
	logs *observer.ObservedLogs
}

// newTestServer returns a server that is shut down at the end of the test.
func newTestServer(t *testing.T, cfg SessionConfig) *testServer {
	t.Helper()
	core, logs := observer.New(zap.DebugLevel)
	log := zap.New(core)
	reg, err := NewRegistry(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := reg.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return &testServer{reg: reg, bind: NewBinder(reg, nil, log), logs: logs}
}

// testClient is a client connection over net.Pipe that records, per
// process, the output before its exit and the exit code (not the output of
// processes named hog*).
type testClient struct {
	t      *testing.T
	c, srv *rpc.Conn

	mu      sync.Mutex
	out     map[string]*strings.Builder // guarded by mu: output of each process before its exit
	exit    map[string]int              // guarded by mu: exit code of each exited process
	cmd     map[string][]execDelta      // guarded by mu: command/exec/outputDelta of each id
	denied  map[string]bool             // guarded by mu: sandboxDenied of each exited process
	changed chan struct{}               // guarded by mu: closed and replaced on every notification
}

// dial connects a client to s and completes the handshake. The connection
// is closed at the end of the test (if close was not called before).
func (s *testServer) dial(t *testing.T) *testClient { t.Helper(); return s.dialConc(t, 0) }

// dialConc is dial with the server side's rpc.Options.Concurrency.
func (s *testServer) dialConc(t *testing.T, concurrency int) *testClient {
	t.Helper()
	a, z := net.Pipe()
	tc := &testClient{t: t, changed: make(chan struct{}), out: map[string]*strings.Builder{}, exit: map[string]int{}, denied: map[string]bool{}}
	tc.srv = rpc.NewConn(rpc.NewStdioFramer(a, a, a, "server", 1<<24), rpc.Options{Bind: s.bind.Bind, Concurrency: concurrency})
	tc.c = rpc.NewConn(rpc.NewStdioFramer(z, z, z, "client", 1<<26), rpc.Options{Bind: func(*rpc.Conn) rpc.Handler { return rpc.HandlerFunc(tc.handle) }})
	t.Cleanup(tc.close)
	tc.call("initialize", map[string]any{"clientName": "test"}, nil)
	if err := tc.c.Notify(context.Background(), "initialized", nil); err != nil {
		t.Fatal(err)
	}
	return tc
}

func (tc *testClient) handle(_ context.Context, req *rpc.Request) (any, error) {
	var n struct {
		ProcessID string `json:"processId"`
		Chunk     string `json:"chunk"`
		ExitCode  int    `json:"exitCode"`
		Denied    bool   `json:"sandboxDenied"`
	}
	_ = json.Unmarshal(req.Params, &n)
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if req.Method == "command/exec/outputDelta" {
		tc.recordDelta(req.Params)
	}
	if _, done := tc.exit[n.ProcessID]; !done && !strings.HasPrefix(n.ProcessID, "hog") {
		switch req.Method {
		case "process/output":
			b, _ := base64.StdEncoding.DecodeString(n.Chunk)
			if tc.out[n.ProcessID] == nil {
				tc.out[n.ProcessID] = &strings.Builder{}
			}
			tc.out[n.ProcessID].Write(b)
		case "process/exited":
			tc.exit[n.ProcessID] = n.ExitCode
			tc.denied[n.ProcessID] = n.Denied
		}
	}
	close(tc.changed)
	tc.changed = make(chan struct{})
	return nil, nil
}

// close ends the connection and waits until the server side saw it end.
func (tc *testClient) close() {
	_ = tc.c.Close()
	_ = tc.srv.Close()
	<-tc.c.Done()
	<-tc.srv.Done()
}

// call makes a request that must succeed.
func (tc *testClient) call(method string, params, result any) {
	tc.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tc.c.Call(ctx, method, params, result); err != nil {
		tc.t.Fatalf("%s: %v", method, err)
	}
}

// waitFor waits until ok holds; ok runs with tc.mu held.
func (tc *testClient) waitFor(what string, ok func() bool) {
	tc.t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		tc.mu.Lock()
		done, ch := ok(), tc.changed
		tc.mu.Unlock()
		if done {
			return
		}
		select {
		case <-ch:
		case <-timeout:
			tc.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// waitExited waits for process/exited of id and returns its exit code and
// the output received before it.
func (tc *testClient) waitExited(id string) (code int, out string) {
	tc.t.Helper()
	tc.waitFor(id+" exited", func() bool {
		var ok bool
		code, ok = tc.exit[id]
		if b := tc.out[id]; ok && b != nil {
			out = b.String()
		}
		return ok
	})
	return code, out
}

// waitPid waits for a line "pid=N" in the output of id and returns N.
func (tc *testClient) waitPid(id string) int {
	tc.t.Helper()
	var pid int
	tc.waitFor(id+" pid", func() bool {
		b := tc.out[id]
		if b == nil {
			return false
		}
		_, rest, ok := strings.Cut(b.String(), "pid=")
		line, _, ok2 := strings.Cut(rest, "\n")
		if !ok || !ok2 {
			return false
		}
		pid, _ = strconv.Atoi(line)
		return true
	})
	return pid
}

// startParams are the params of process/start for a shell script.
func startParams(id, script string) map[string]any {
	return map[string]any{"processId": id, "argv": []string{"/bin/sh", "-c", script}, "cwd": os.TempDir(), "env": map[string]string{"PATH": "/usr/bin:/bin"}, "tty": false}
}

// waitGone waits until pid no longer runs (gone, or a zombie).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return
		}
		if f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:])); len(f) > 0 && f[0] == "Z" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// causes returns the causes logged for process id.
func (s *testServer) causes(id string) []string {
	var out []string
	for _, e := range s.logs.FilterMessage("ending process").All() {
		m := e.ContextMap()
		if m["process"] == id {
			out = append(out, m["cause"].(string))
		}
	}
	return out
}
