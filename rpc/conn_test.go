package rpc_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/codexec/codex/rpc"
)

// pipeConn serves a handler over an in-memory stdio framer and returns the
// client side's writer and a line reader.
func pipeConn(t *testing.T, opts rpc.Options, max int64) (io.WriteCloser, *bufio.Scanner, *rpc.Conn) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := rpc.NewConn(rpc.NewStdioFramer(inR, outW, closers{inR, outW}, "exec-server stdio", max), opts)
	t.Cleanup(func() {
		_ = inW.Close()
		_ = c.Close()
		_ = outR.Close()
		c.Wait()
	})
	sc := bufio.NewScanner(outR)
	sc.Buffer(nil, 1<<20)
	return inW, sc, c
}

type closers []io.Closer

func (cs closers) Close() error {
	for _, c := range cs {
		_ = c.Close()
	}
	return nil
}

func readLine(t *testing.T, sc *bufio.Scanner) map[string]any {
	t.Helper()
	done := make(chan bool, 1)
	go func() { done <- sc.Scan() }()
	select {
	case ok := <-done:
		if !ok {
			t.Fatalf("stream ended: %v", sc.Err())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no line")
	}
	var m map[string]any
	if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
		t.Fatalf("bad line %q", sc.Bytes())
	}
	return m
}

func TestConnOrderingAndPreempt(t *testing.T) {
	release := make(chan struct{})
	h := preemptHandler{release: release}
	w, sc, _ := pipeConn(t, rpc.Options{Bind: func(*rpc.Conn) rpc.Handler { return h }}, 1<<20)
	io.WriteString(w, `{"id":1,"method":"slow"}`+"\n"+`{"id":2,"method":"fast"}`+"\n"+`{"id":3,"method":"control"}`+"\n")
	// The control request overtakes the blocked one; "fast" stays behind.
	if m := readLine(t, sc); m["id"] != float64(3) {
		t.Fatalf("first answer %v, want id 3", m)
	}
	close(release)
	if m := readLine(t, sc); m["id"] != float64(1) {
		t.Fatalf("second answer %v", m)
	}
	if m := readLine(t, sc); m["id"] != float64(2) {
		t.Fatalf("third answer %v", m)
	}
	// Parse errors answer id -1 and keep the connection.
	io.WriteString(w, "{oops\n")
	m := readLine(t, sc)
	if m["id"] != float64(-1) || !strings.HasPrefix(m["error"].(map[string]any)["message"].(string), "failed to parse JSON-RPC message from exec-server stdio: ") {
		t.Fatalf("parse error %v", m)
	}
	io.WriteString(w, `{"id":"s","method":"fast"}`+"\n")
	if m := readLine(t, sc); m["id"] != "s" {
		t.Fatalf("string id %v", m)
	}
}

type preemptHandler struct{ release chan struct{} }

func (h preemptHandler) Handle(ctx context.Context, req *rpc.Request) (any, error) {
	if req.Method == "slow" {
		select {
		case <-h.release:
		case <-ctx.Done():
		}
	}
	return map[string]string{"m": req.Method}, nil
}

func (h preemptHandler) Preempt(_ context.Context, req *rpc.Request) (any, error, bool) {
	if req.Method == "control" {
		return struct{}{}, nil, true
	}
	return nil, nil, false
}

func TestConnOversizeLine(t *testing.T) {
	w, sc, c := pipeConn(t, rpc.Options{}, 16)
	go io.WriteString(w, `{"id":1,"method":"abcdefghijklmnopqrstuvwxyz"}`+"\n")
	m := readLine(t, sc)
	if m["id"] != float64(-1) {
		t.Fatalf("oversize answer %v", m)
	}
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("connection did not end")
	}
}

func TestConnCallAndAsync(t *testing.T) {
	// Two Conns back to back: one serves, one calls.
	aR, aW := io.Pipe()
	bR, bW := io.Pipe()
	server := rpc.NewConn(rpc.NewStdioFramer(aR, bW, closers{aR, bW}, "s", 1<<20), rpc.Options{Bind: func(c *rpc.Conn) rpc.Handler {
		return rpc.HandlerFunc(func(ctx context.Context, req *rpc.Request) (any, error) {
			if req.Method == "later" {
				c.Go(func(context.Context) { _ = c.Respond(req.ID, "async", nil) })
				return nil, rpc.ErrAsync
			}
			if req.Method == "data" {
				return nil, &rpc.Error{Code: rpc.CodeInternalError, Message: "with data", Data: json.RawMessage(`{"op":"exec","errno":2}`)}
			}
			return nil, rpc.Errorf(rpc.CodeMethodNotFound, "no %s", req.Method)
		})
	}})
	client := rpc.NewConn(rpc.NewStdioFramer(bR, aW, closers{bR, aW}, "c", 1<<20), rpc.Options{})
	defer func() {
		client.Close()
		server.Close()
		client.Wait()
		server.Wait()
	}()
	var s string
	if err := client.Call(context.Background(), "later", nil, &s); err != nil || s != "async" {
		t.Fatalf("Call: %q %v", s, err)
	}
	err := client.Call(context.Background(), "nope", map[string]int{"a": 1}, nil)
	if we, ok := err.(*rpc.Error); !ok || we.Code != rpc.CodeMethodNotFound || we.Message != "no nope" {
		t.Fatalf("Call error %v", err)
	}
	// The error's data member crosses the wire; without data there is none.
	err = client.Call(context.Background(), "data", nil, nil)
	if we, ok := err.(*rpc.Error); !ok || string(we.Data) != `{"op":"exec","errno":2}` || we.Message != "with data" {
		t.Fatalf("Call error with data %#v", err)
	}
	if we, _ := client.Call(context.Background(), "nope", nil, nil).(*rpc.Error); we == nil || we.Data != nil {
		t.Fatalf("an error without data came back with %#v", we)
	}
}
