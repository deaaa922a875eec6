package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// cx is a raw command/exec client over either transport: every message
// received, responses and notifications alike, arrives on in.
type cx struct {
	t      *testing.T
	write  func(string)
	in     chan map[string]any
	close  func()
	nextID int
	notifs []map[string]any // notifications seen while waiting for responses

	requests requestLog // command/exec* requests awaiting their response (schema_check_test.go)
}

func cxStdio(t *testing.T) *cx { return cxStdioEnv(t, nil) }

// cxStdioEnv is cxStdio with env added to the server's environment.
func cxStdioEnv(t *testing.T, env []string) *cx { return cxOverStdio(t, startStdioEnv(t, env)) }

// cxOverStdio is a cx on a started stdio server.
func cxOverStdio(t *testing.T, s *stdioServer) *cx {
	c := &cx{t: t, write: func(l string) { s.send(t, l+"\n") }, in: make(chan map[string]any, 1024), close: func() { s.in.Close() }, nextID: 1}
	go func() {
		defer close(c.in)
		for l := range s.lines {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) == nil {
				c.in <- m
			}
		}
	}()
	return c
}

func cxWS(t *testing.T) *cx { return cxWSEnv(t, nil) }

// cxWSEnv is cxWS with env added to the server's environment.
func cxWSEnv(t *testing.T, env []string) *cx {
	return cxOverWS(t, startServerWith(t, binary, func(cmd *exec.Cmd) { cmd.Env = append(cmd.Env, env...) }))
}

// cxOverWS is a cx on a started WebSocket server.
func cxOverWS(t *testing.T, s *server) *cx { return cxDial(t, s.URL) }

// cxDial connects a cx to the WebSocket server at url.
func cxDial(t *testing.T, url string) *cx {
	ctx, cancel := context.WithCancel(context.Background())
	ws, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	ws.SetReadLimit(-1)
	c := &cx{t: t, in: make(chan map[string]any, 1024), nextID: 1}
	c.write = func(l string) {
		if err := ws.Write(ctx, websocket.MessageText, []byte(l)); err != nil {
			t.Errorf("write: %v", err)
		}
	}
	c.close = func() { ws.Close(websocket.StatusNormalClosure, ""); cancel() }
	t.Cleanup(c.close)
	go func() {
		defer close(c.in)
		for {
			_, data, err := ws.Read(ctx)
			if err != nil {
				return
			}
			var m map[string]any
			if json.Unmarshal(data, &m) == nil {
				c.in <- m
			}
		}
	}()
	return c
}

// forEachTransport runs f over stdio and over WebSocket, after the
// handshake with experimentalApi.
func forEachTransport(t *testing.T, f func(t *testing.T, c *cx)) {
	for _, tr := range []struct {
		name string
		open func(*testing.T) *cx
	}{{"stdio", cxStdio}, {"ws", cxWS}} {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			c := tr.open(t)
			c.call("initialize", map[string]any{"clientName": "e2e", "capabilities": map[string]any{"experimentalApi": true}})
			c.write(`{"method":"initialized","params":{}}`)
			f(t, c)
		})
	}
}

func (c *cx) send(method string, params any) int {
	id := c.nextID
	c.nextID++
	b, _ := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	c.requests.sent(fmt.Sprint(id), b)
	c.write(string(b))
	return id
}

// wait returns the response to id, keeping notifications seen meanwhile.
func (c *cx) wait(id int, timeout time.Duration) map[string]any {
	c.t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case m, ok := <-c.in:
			if !ok {
				c.t.Fatalf("connection closed waiting for %d", id)
			}
			if _, isN := m["method"]; isN {
				c.notifs = append(c.notifs, m)
				continue
			}
			if m["id"] == float64(id) {
				_, isErr := m["error"]
				c.requests.answeredValue(c.t, fmt.Sprint(id), !isErr, m["result"])
				return m
			}
			c.t.Fatalf("unexpected message %v waiting for %d", m, id)
		case <-deadline:
			c.t.Fatalf("no response to %d within %v", id, timeout)
		}
	}
}

// waitEach returns the responses to ids, which may come in any order,
// keeping notifications seen meanwhile.
func (c *cx) waitEach(timeout time.Duration, ids ...int) map[int]map[string]any {
	c.t.Helper()
	want := map[float64]int{}
	for _, id := range ids {
		want[float64(id)] = id
	}
	got := map[int]map[string]any{}
	deadline := time.After(timeout)
	for len(got) < len(ids) {
		select {
		case m, ok := <-c.in:
			if !ok {
				c.t.Fatalf("connection closed waiting for %v", ids)
			}
			if _, isN := m["method"]; isN {
				c.notifs = append(c.notifs, m)
				continue
			}
			idf, _ := m["id"].(float64)
			id, ok := want[idf]
			if !ok {
				c.t.Fatalf("unexpected message %v waiting for %v", m, ids)
			}
			_, isErr := m["error"]
			c.requests.answeredValue(c.t, fmt.Sprint(id), !isErr, m["result"])
			got[id] = m
		case <-deadline:
			c.t.Fatalf("no responses to %v within %v (got %d)", ids, timeout, len(got))
		}
	}
	return got
}

func (c *cx) call(method string, params any) map[string]any {
	c.t.Helper()
	return c.wait(c.send(method, params), 15*time.Second)
}

// result asserts a successful response and returns its JSON result.
func result(t *testing.T, m map[string]any) string {
	t.Helper()
	if m["error"] != nil {
		t.Fatalf("error %v", m["error"])
	}
	b, _ := json.Marshal(m["result"])
	return string(b)
}

func errorOf(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	if e == nil {
		return "<no error>"
	}
	return fmt.Sprintf("%v %v", e["code"], e["message"])
}

// deltas concatenates the outputDelta bytes of one stream and reports the
// capReached flag of its last delta.
func (c *cx) deltas(id, stream string) (string, bool) {
	var sb strings.Builder
	last := false
	for _, n := range c.notifs {
		p, _ := n["params"].(map[string]any)
		if n["method"] != "command/exec/outputDelta" || p["processId"] != id || p["stream"] != stream {
			continue
		}
		b, _ := base64.StdEncoding.DecodeString(p["deltaBase64"].(string))
		sb.Write(b)
		last = p["capReached"] == true
	}
	return sb.String(), last
}

// waitDelta waits until the stream's deltas contain want.
func (c *cx) waitDelta(id, stream, want string) {
	c.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		if got, _ := c.deltas(id, stream); strings.Contains(got, want) {
			return
		}
		select {
		case m := <-c.in:
			if _, isN := m["method"]; !isN {
				c.t.Fatalf("unexpected response %v waiting for %q", m, want)
			}
			c.notifs = append(c.notifs, m)
		case <-deadline:
			got, _ := c.deltas(id, stream)
			c.t.Fatalf("%s %s: got %q, want %q", id, stream, got, want)
		}
	}
}

var unsandboxed = map[string]any{"type": "dangerFullAccess"}

func execParams(script string, kv ...any) map[string]any {
	p := map[string]any{"command": []string{"/bin/sh", "-c", script}, "sandboxPolicy": unsandboxed}
	for i := 0; i < len(kv); i += 2 {
		p[kv[i].(string)] = kv[i+1]
	}
	return p
}
