package unifiedexec

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wire"
	"log/slog"
)

// fakeCommandExecServer answers every command/exec read from in with three
// stdout deltas and the response, written back to back in one write.
func fakeCommandExecServer(in io.Reader, out io.Writer) {
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		var req struct {
			ID     int                    `json:"id"`
			Method string                 `json:"method"`
			Params wire.CommandExecParams `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &req) != nil || req.Method != wire.MethodCommandExec {
			continue
		}
		var b strings.Builder
		for _, d := range []string{"YQ==", "Yg==", "Yw=="} { // a, b, c
			fmt.Fprintf(&b, `{"method":"command/exec/outputDelta","params":{"processId":%q,"stream":"stdout","deltaBase64":%q,"capReached":false}}`+"\n", *req.Params.ProcessID, d)
		}
		fmt.Fprintf(&b, `{"id":%d,"result":{"exitCode":0,"stdout":"","stderr":""}}`+"\n", req.ID)
		if _, err := io.WriteString(out, b.String()); err != nil {
			return
		}
	}
}

// TestCommandExecDeltasBeforeAnswer: deltas that precede the answer on the
// wire have all reached OnOutput when Wait returns, even when they come in
// the same read as the answer.
func TestCommandExecDeltasBeforeAnswer(t *testing.T) {
	c := &Client{procs: map[string]*Process{}, log: slog.New(slog.DiscardHandler), ready: make(chan struct{}), changed: make(chan struct{})}
	c.ctx, c.stop = context.WithCancel(context.Background())
	toServer, fromClient := io.Pipe()
	toClient, fromServer := io.Pipe()
	go fakeCommandExecServer(toServer, fromServer)
	conn := c.newConn(rpc.NewStdioFramer(toClient, fromClient, toClient, "test", 1<<20), false)
	c.setConn(conn)
	defer func() {
		c.stop()
		_ = conn.Close()
		conn.Wait()
		c.wg.Wait()
		_ = toServer.Close()
		_ = fromServer.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < 300; i++ {
		var got strings.Builder
		res, err := c.CommandExec(ctx, CommandExecRequest{
			Argv: []string{"x"}, StreamOutput: true,
			OnOutput: func(o CommandExecOutput) { got.Write(o.Data) },
		})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("run %d: %+v, %v", i, res, err)
		}
		if got.String() != "abc" {
			t.Fatalf("run %d: OnOutput had %q when Wait returned", i, got.String())
		}
	}
}

// TestCommandExecParams: the Go request's limits, env and sandbox become
// the wire members, with "none" and "default" kept apart.
func TestCommandExecParams(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  CommandExecRequest
		want string // the params as JSON, or "error: …"
	}{
		{"defaults", CommandExecRequest{Argv: []string{"true"}}, `{"command":["true"],"processId":"p"}`},
		{"nil argv", CommandExecRequest{}, `{"command":[],"processId":"p"}`},
		{"no limits", CommandExecRequest{Argv: []string{"a"}, Timeout: NoTimeout, OutputBytesCap: NoOutputBytesCap},
			`{"command":["a"],"processId":"p","disableOutputCap":true,"disableTimeout":true}`},
		{"limits", CommandExecRequest{Argv: []string{"a"}, Timeout: 1500*time.Microsecond + 1, OutputBytesCap: 7},
			`{"command":["a"],"processId":"p","outputBytesCap":7,"timeoutMs":2}`},
		{"env", CommandExecRequest{Argv: []string{"a"}, Env: map[string]string{"A": "1"}, Unset: []string{"PATH"}, Cwd: "sub"},
			`{"command":["a"],"processId":"p","cwd":"sub","env":{"A":"1","PATH":null}}`},
		{"sandbox", CommandExecRequest{Argv: []string{"a"}, PermissionProfile: ":workspace", TTY: true, Size: &wire.Size{Rows: 2, Cols: 3}},
			`{"command":["a"],"processId":"p","tty":true,"size":{"rows":2,"cols":3},"permissionProfile":":workspace"}`},
		{"streams", CommandExecRequest{Argv: []string{"a"}, StreamStdin: true, StreamOutput: true, SandboxPolicy: map[string]any{"type": "readOnly"}},
			`{"command":["a"],"processId":"p","streamStdin":true,"streamStdoutStderr":true,"sandboxPolicy":{"type":"readOnly"}}`},
		{"set and unset", CommandExecRequest{Argv: []string{"a"}, Env: map[string]string{"A": "1"}, Unset: []string{"A"}},
			`error: environment variable "A" is both set and unset`},
		{"negative timeout", CommandExecRequest{Argv: []string{"a"}, Timeout: -2}, `error: timeout -2ns is negative`},
		{"negative cap", CommandExecRequest{Argv: []string{"a"}, OutputBytesCap: -2}, `error: output cap -2 is negative`},
	} {
		p, err := tc.req.params("p")
		var got string
		if err != nil {
			got = "error: " + err.Error()
		} else {
			b, _ := json.Marshal(p)
			got = string(b)
		}
		if got != tc.want {
			t.Errorf("%s: %s\nwant %s", tc.name, got, tc.want)
		}
	}
}
