package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestHTTPRequestStreamIDs holds the requestId rules of streamed
// requests to the reference's (probe http.stream_duplicate_requestId of
// the shared spec's §6.2), over stdio and WebSocket: while a
// stream is open its requestId is refused for another stream, a buffered
// request may use it, and once the stream is done (here by its timeout,
// with the read error) the id is free again.
func TestHTTPRequestStreamIDs(t *testing.T) {
	t.Parallel()
	for _, tr := range []struct {
		name string
		open func(*testing.T, []string) *cx
	}{{"stdio", cxStdioEnv}, {"ws", cxWSEnv}} {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			srv := newHTTPTestServer(t)
			c := tr.open(t, nil)
			result(t, c.call("initialize", map[string]any{"clientName": "e2e"}))
			c.write(`{"method":"initialized"}`)
			req := func(path, id string, stream bool, timeout int) map[string]any {
				p := map[string]any{"method": "GET", "url": srv.URL + path, "requestId": id, "streamResponse": stream}
				if timeout > 0 {
					p["timeoutMs"] = timeout
				}
				return p
			}
			c.notifs = nil
			if r := result(t, c.call("http/request", req("/hold", "s1", true, 1500))); !strings.Contains(r, `"status":200`) {
				t.Fatalf("hold: %s", r)
			}
			active := "-32602 http/request streamResponse requestId `s1` is already active"
			if got := errorOf(c.call("http/request", req("/chunked", "s1", true, 0))); got != active {
				t.Errorf("second stream s1: %s, want %s", got, active)
			}
			// The id is checked before the method (probed on the reference).
			bad := req("/chunked", "s1", true, 0)
			bad["method"] = "GE T"
			if got := errorOf(c.call("http/request", bad)); got != active {
				t.Errorf("second stream s1 with a bad method: %s, want %s", got, active)
			}
			// A stream refused by its checks, or failing before its
			// headers, reserves nothing.
			bad["requestId"] = "z"
			if got, want := errorOf(c.call("http/request", bad)), "-32602 http/request method is invalid: invalid HTTP method"; got != want {
				t.Errorf("bad method: %s, want %s", got, want)
			}
			refused := req("/", "y", true, 0)
			refused["url"] = "http://127.0.0.1:1/"
			if got, want := errorOf(c.call("http/request", refused)), "-32603 http/request failed: error sending request for url (http://127.0.0.1:1/)"; got != want {
				t.Errorf("refused: %s, want %s", got, want)
			}
			for _, id := range []string{"z", "y"} {
				if r := c.call("http/request", req("/status/200", id, true, 0)); r["error"] != nil {
					t.Errorf("stream %s after its failure: %v", id, r["error"])
				}
			}
			if r := c.call("http/request", req("/echo", "s1", false, 0)); r["error"] != nil {
				t.Errorf("a buffered request with an active stream's id: %v", r["error"])
			}
			var notes []map[string]any
			for len(notes) == 0 || notes[len(notes)-1]["params"].(map[string]any)["requestId"] != "s1" {
				notes = append(notes, c.bodyDeltas(t, 10*time.Second)...)
			}
			last := notes[len(notes)-1]["params"].(map[string]any)
			if last["error"] != "error decoding response body" || last["deltaBase64"] != "" {
				t.Errorf("the held stream ended with %v, want the read error", last)
			}
			c.notifs = nil
			result(t, c.call("http/request", req("/chunked", "s1", true, 0)))
			var body strings.Builder
			for _, n := range c.bodyDeltas(t, 10*time.Second) {
				b, _ := base64.StdEncoding.DecodeString(n["params"].(map[string]any)["deltaBase64"].(string))
				body.Write(b)
			}
			if body.String() != "part0\npart1\npart2\npart3\n" {
				t.Errorf("s1 again: body %q", body.String())
			}
		})
	}
}

// TestHTTPRequestStreamEndsWithConnection opens a stream that the HTTP
// server never finishes and closes the client's connection: the server
// must close the HTTP connection too (its goroutine and socket end with
// the client's connection), over stdio and WebSocket.
func TestHTTPRequestStreamEndsWithConnection(t *testing.T) {
	t.Parallel()
	for _, tr := range []struct {
		name string
		open func(*testing.T, []string) *cx
	}{{"stdio", cxStdioEnv}, {"ws", cxWSEnv}} {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			srv := newHTTPTestServer(t)
			c := tr.open(t, nil)
			result(t, c.call("initialize", map[string]any{"clientName": "e2e"}))
			c.write(`{"method":"initialized"}`)
			result(t, c.call("http/request", map[string]any{"method": "GET", "url": srv.URL + "/hold", "requestId": "h", "streamResponse": true}))
			if srv.open() != 1 {
				t.Fatalf("%d HTTP connections open, want 1", srv.open())
			}
			c.close()
			deadline := time.Now().Add(10 * time.Second)
			for srv.open() != 0 {
				if time.Now().After(deadline) {
					t.Fatal("the HTTP connection outlived the client's connection by 10s")
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// TestHTTPRequestStreamBackpressure streams a 48 MiB body to a stdio
// client that stops reading: the server must stop reading the body too,
// so that what the HTTP server got written stays near the buffers on the
// way (kernel socket buffers, the pipe, the test's line queue), far below
// the body; then the client reads again and gets every byte, in order,
// and done.
func TestHTTPRequestStreamBackpressure(t *testing.T) {
	const size = 48 << 20 // above the 40 MiB bound below: without backpressure all of it is written
	srv := newHTTPTestServer(t)
	s := startStdioEnv(t, nil)
	ask := func(id int, method string, params any) {
		b, _ := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
		s.send(t, string(b)+"\n")
	}
	ask(1, "initialize", map[string]any{"clientName": "e2e"})
	if m := s.recv(t); m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	s.send(t, `{"method":"initialized"}`+"\n")
	ask(2, "http/request", map[string]any{"method": "GET", "url": fmt.Sprintf("%s/big/%d", srv.URL, size), "requestId": "big", "streamResponse": true})
	// Read nothing: the line queue fills, then the pipe, and the HTTP
	// server's writes stop. Stopped is a second without a written byte
	// once the body has begun; without backpressure that comes only when
	// the whole body is out.
	var stalled int64
	for still, deadline := time.Now(), time.Now().Add(30*time.Second); stalled == 0 || time.Since(still) < time.Second; time.Sleep(50 * time.Millisecond) {
		if n := srv.bigWritten.Load(); n != stalled {
			stalled, still = n, time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("the HTTP server kept writing for 30 s while the client read nothing: %d bytes", stalled)
		}
	}
	if stalled > 40<<20 {
		t.Errorf("%d bytes written to a client that reads nothing, want the buffers' worth (< 40 MiB)", stalled)
	}
	t.Logf("written while the client did not read: %.1f MiB", float64(stalled)/(1<<20))
	pattern := strings.Repeat("0123456789abcdef", 4096)
	var got, seq int64
	for {
		m := s.recv(t)
		if m["id"] == float64(2) {
			if m["result"] == nil {
				t.Fatalf("http/request: %v", m)
			}
			continue
		}
		p := m["params"].(map[string]any)
		if seq++; p["seq"] != float64(seq) {
			t.Fatalf("seq %v, want %d", p["seq"], seq)
		}
		b, _ := base64.StdEncoding.DecodeString(p["deltaBase64"].(string))
		off := got % int64(len(pattern))
		for i := 0; i < len(b); {
			k := min(len(b)-i, len(pattern)-int(off))
			if string(b[i:i+k]) != pattern[off:int(off)+k] {
				t.Fatalf("body differs at byte %d", got+int64(i))
			}
			i += k
			off = 0
		}
		got += int64(len(b))
		if p["done"] == true {
			if p["error"] != nil {
				t.Fatalf("done with error %v", p["error"])
			}
			break
		}
	}
	if got != size {
		t.Errorf("got %d bytes, want %d", got, size)
	}
}

// TestHTTPRequestBounds holds the [ours] bounds of http/request
// (docs/protocol.md §6.16): a buffered body of 16 MiB is returned whole,
// one byte more is refused with a text that names streamResponse; 64
// requests may be in flight on a connection, the 65th is refused until
// one ends.
func TestHTTPRequestBounds(t *testing.T) {
	t.Parallel()
	srv := newHTTPTestServer(t)
	c := cxWSEnv(t, nil)
	result(t, c.call("initialize", map[string]any{"clientName": "e2e"}))
	c.write(`{"method":"initialized"}`)
	get := func(path, id string, stream bool) map[string]any {
		return c.wait(c.send("http/request", map[string]any{"method": "GET", "url": srv.URL + path, "requestId": id, "streamResponse": stream}), 60*time.Second)
	}
	r := get(fmt.Sprintf("/big/%d", 16<<20), "b", false)
	if res, _ := r["result"].(map[string]any); res == nil || len(res["bodyBase64"].(string)) != 4*(16<<20)/3+1 && len(res["bodyBase64"].(string)) != (16<<20+2)/3*4 {
		t.Errorf("16 MiB buffered: %v", errorOf(r))
	}
	if got, want := errorOf(get(fmt.Sprintf("/big/%d", 16<<20+1), "b", false)), "-32603 failed to read http/request response body: the body is larger than the 16777216 bytes http/request buffers; ask for streamResponse"; got != want {
		t.Errorf("16 MiB + 1 buffered: %s, want %s", got, want)
	}
	for i := range 64 {
		result(t, get("/hold", fmt.Sprint("h", i), true))
	}
	full := "-32603 http/request has 64 requests in flight on this connection, the most it may have; wait for one to end"
	if got := errorOf(get("/echo", "x", true)); got != full {
		t.Errorf("65th stream: %s, want %s", got, full)
	}
	if got := errorOf(get("/echo", "x", false)); got != full {
		t.Errorf("65th request, buffered: %s, want %s", got, full)
	}
	c.close()
	deadline := time.Now().Add(10 * time.Second)
	for srv.open() != 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := srv.open(); n != 0 {
		t.Errorf("%d HTTP connections outlived the client's", n)
	}
}
