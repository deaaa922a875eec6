package rpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codexec/codex/internal/rpctest"
	"github.com/codexec/codex/rpc"
)

// Scenario tests of Conn over both framers on net.Pipe.

func echo(_ context.Context, req *rpc.Request) (any, error) {
	if req.Method == "fail" {
		return nil, rpc.Errorf(-32099, "failed on purpose")
	}
	return map[string]any{"method": req.Method, "params": req.Params}, nil
}

// TestScenarioSymmetricCalls: both ends call each other on one connection,
// results and wire errors come back to the right caller.
func TestScenarioSymmetricCalls(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			a, b := tr.pair(t)
			bind := func(*rpc.Conn) rpc.Handler { return rpc.HandlerFunc(echo) }
			ca := startConn(t, a, rpc.Options{Bind: bind})
			cb := startConn(t, b, rpc.Options{Bind: bind})
			ctx := callCtx(t)
			var got struct {
				Method string         `json:"method"`
				Params map[string]int `json:"params"`
			}
			if err := cb.Call(ctx, "m1", map[string]int{"x": 1}, &got); err != nil || got.Method != "m1" || got.Params["x"] != 1 {
				t.Fatalf("b→a: %+v %v", got, err)
			}
			if err := ca.Call(ctx, "m2", map[string]int{"x": 2}, &got); err != nil || got.Method != "m2" || got.Params["x"] != 2 {
				t.Fatalf("a→b: %+v %v", got, err)
			}
			err := ca.Call(ctx, "fail", nil, nil)
			var we *rpc.Error
			if !errors.As(err, &we) || we.Code != -32099 || we.Message != "failed on purpose" {
				t.Fatalf("error call: %v", err)
			}
			if ca.Label() != "A" || cb.Label() != "B" {
				t.Fatalf("labels %q %q", ca.Label(), cb.Label())
			}
		})
	}
}

// TestScenarioConcurrency: with Concurrency N >= 2 up to N requests run at
// once and answers come in completion order; never more than N run.
func TestScenarioConcurrency(t *testing.T) {
	for _, tr := range transports {
		for _, n := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s/N=%d", tr.name, n), func(t *testing.T) { testConcurrency(t, tr, n) })
		}
	}
}

func testConcurrency(t *testing.T, tr transport, n int) {
	a, b := tr.pair(t)
	var running, peak atomic.Int32
	all := make(chan struct{}) // closed when n handlers run at once
	var once sync.Once
	handler := func(ctx context.Context, req *rpc.Request) (any, error) {
		now := running.Add(1)
		defer running.Add(-1)
		for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
		}
		if now == int32(n) {
			once.Do(func() { close(all) })
		}
		// The first request waits for the others: it can only finish if
		// n requests run at once, and it finishes last.
		if req.Method == "first" {
			select {
			case <-all:
				time.Sleep(20 * time.Millisecond)
			case <-ctx.Done():
			}
		} else {
			<-all
		}
		return req.Method, nil
	}
	startConn(t, a, rpc.Options{Concurrency: n, Bind: func(*rpc.Conn) rpc.Handler { return rpc.HandlerFunc(handler) }})
	cb := startConn(t, b, rpc.Options{})
	ctx := callCtx(t)
	order := make(chan string, 2*n)
	var wg sync.WaitGroup
	call := func(m string) {
		defer wg.Done()
		var got string
		if err := cb.Call(ctx, m, nil, &got); err != nil || got != m {
			t.Errorf("%s: %q %v", m, got, err)
		}
		order <- m
	}
	wg.Add(1)
	go call("first")
	time.Sleep(20 * time.Millisecond) // "first" is received first
	for i := 1; i < 2*n; i++ {
		wg.Add(1)
		go call(fmt.Sprintf("m%d", i))
	}
	wg.Wait()
	close(order)
	var seq []string
	for m := range order {
		seq = append(seq, m)
	}
	if seq[0] == "first" {
		t.Errorf("answers in arrival order %v, want completion order", seq)
	}
	if p := peak.Load(); p != int32(n) {
		t.Errorf("peak concurrency %d, want %d", p, n)
	}
}

// TestScenarioJSONRPCMember: the JSONRPC option adds "jsonrpc":"2.0" to
// every message sent (request, notification, result, error); without it
// the member is absent. Inbound messages are accepted either way.
func TestScenarioJSONRPCMember(t *testing.T) {
	for _, tr := range transports {
		for _, on := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/%v", tr.name, on), func(t *testing.T) { testJSONRPCMember(t, tr, on) })
		}
	}
}

func testJSONRPCMember(t *testing.T, tr transport, on bool) {
	a, raw := tr.pair(t)
	defer raw.Close(false) // before the Conn's cleanup: a WebSocket close needs a reading peer
	c := startConn(t, a, rpc.Options{JSONRPC: on, Bind: func(*rpc.Conn) rpc.Handler { return rpc.HandlerFunc(echo) }})
	check := func(what string, msg []byte) map[string]any {
		t.Helper()
		var m map[string]any
		if err := json.Unmarshal(msg, &m); err != nil {
			t.Fatalf("%s: %q: %v", what, msg, err)
		}
		v, has := m["jsonrpc"]
		if has != on || (on && v != "2.0") {
			t.Errorf("%s: jsonrpc member %v (present %v), option %v: %s", what, v, has, on, msg)
		}
		return m
	}
	rpctest.WriteRaw(t, raw, `{"jsonrpc":"2.0","id":1,"method":"m","params":{}}`)
	check("result", rpctest.ReadRaw(t, raw))
	rpctest.WriteRaw(t, raw, `{"id":2,"method":"fail"}`)
	if m := check("error", rpctest.ReadRaw(t, raw)); m["error"] == nil {
		t.Errorf("no error member: %v", m)
	}
	res := make(chan error, 1) // net.Pipe: a write waits for the reader
	go func() { res <- c.Notify(callCtx(t), "note", map[string]int{}) }()
	check("notification", rpctest.ReadRaw(t, raw))
	if err := <-res; err != nil {
		t.Fatalf("notify: %v", err)
	}
	go func() { res <- c.Call(callCtx(t), "ask", nil, nil) }()
	m := check("request", rpctest.ReadRaw(t, raw))
	id, _ := json.Marshal(m["id"])
	rpctest.WriteRaw(t, raw, `{"id":`+string(id)+`,"result":{}}`)
	if err := <-res; err != nil {
		t.Fatalf("call: %v", err)
	}
}

// TestScenarioParseError: the answer to an unparseable message has id -1
// and the text of Options.ParseError (or the neutral default) with the
// framer's label; the connection stays open.
func TestScenarioParseError(t *testing.T) {
	custom := func(label string, tooLarge bool, err error) string {
		return fmt.Sprintf("custom %s %v: %v", label, tooLarge, err)
	}
	for _, tr := range transports {
		for _, c := range []struct {
			name string
			fn   func(string, bool, error) string
			want string
		}{
			{"default", nil, "failed to parse JSON-RPC message from A: "},
			{"option", custom, "custom A false: "},
		} {
			t.Run(tr.name+"/"+c.name, func(t *testing.T) {
				a, raw := tr.pair(t)
				defer raw.Close(false)
				startConn(t, a, rpc.Options{ParseError: c.fn, Bind: func(*rpc.Conn) rpc.Handler { return rpc.HandlerFunc(echo) }})
				rpctest.WriteRaw(t, raw, `{not json`)
				var m struct {
					ID    int64     `json:"id"`
					Error rpc.Error `json:"error"`
				}
				if err := json.Unmarshal(rpctest.ReadRaw(t, raw), &m); err != nil {
					t.Fatal(err)
				}
				if m.ID != -1 || m.Error.Code != rpc.CodeInvalidRequest || !strings.HasPrefix(m.Error.Message, c.want) {
					t.Fatalf("got %+v, want id -1, -32600, %q…", m, c.want)
				}
				rpctest.WriteRaw(t, raw, `{"id":3,"method":"still"}`)
				if msg := rpctest.ReadRaw(t, raw); !strings.Contains(string(msg), `"still"`) {
					t.Fatalf("connection did not stay usable: %s", msg)
				}
			})
		}
	}
}
