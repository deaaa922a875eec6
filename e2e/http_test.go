package e2e

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// httpTestServer is the loopback HTTP server of
// testdata/http_record.py, path for path: /echo (and any unknown path)
// answers the raw request it read, the others answer fixed responses,
// some of them malformed, slow or cut short. It keeps connections alive
// as the recording's server did, and records every request head.
type httpTestServer struct {
	ln   net.Listener
	URL  string
	Port string
	wg   sync.WaitGroup
	mu   sync.Mutex
	conn map[net.Conn]struct{}
	reqs []string
	// bigWritten counts the body bytes /big/N handed to the kernel.
	bigWritten atomic.Int64
}

func newHTTPTestServer(t *testing.T) *httpTestServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &httpTestServer{ln: ln, conn: map[net.Conn]struct{}{}}
	s.Port = strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	s.URL = "http://127.0.0.1:" + s.Port
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conn[c] = struct{}{}
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.serve(c)
				s.mu.Lock()
				delete(s.conn, c)
				s.mu.Unlock()
				c.Close()
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for c := range s.conn {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

// open is how many connections are open.
func (s *httpTestServer) open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conn)
}

// requests returns the request heads and bodies read so far.
func (s *httpTestServer) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.reqs...)
}

func (s *httpTestServer) serve(c net.Conn) {
	br := bufio.NewReader(c)
	for {
		var raw bytes.Buffer
		length := 0
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			raw.WriteString(line)
			if line == "\r\n" {
				break
			}
			if n, ok := strings.CutPrefix(strings.ToLower(line), "content-length:"); ok {
				length, _ = strconv.Atoi(strings.TrimSpace(n))
			}
		}
		body := make([]byte, length)
		if _, err := io.ReadFull(br, body); err != nil {
			return
		}
		raw.Write(body)
		s.mu.Lock()
		s.reqs = append(s.reqs, raw.String())
		s.mu.Unlock()
		path := strings.Fields(raw.String())[1]
		if !s.answer(c, path, raw.Bytes()) {
			return
		}
	}
}

// answer writes the response for path; false ends the connection.
func (s *httpTestServer) answer(c net.Conn, path string, raw []byte) bool {
	w := func(s string) { c.Write([]byte(s)) }
	shut := func() { c.(*net.TCPConn).CloseWrite() }
	switch {
	case strings.HasPrefix(path, "/status/"):
		w("HTTP/1.1 " + path[len("/status/"):] + " Whatever\r\nContent-Length: 4\r\n\r\nbody")
	case strings.HasPrefix(path, "/redir/"):
		code, to, _ := strings.Cut(path[len("/redir/"):], "/")
		w("HTTP/1.1 " + code + " Moved\r\nLocation: /" + to + "\r\nContent-Length: 5\r\n\r\nmoved")
	case strings.HasPrefix(path, "/abs/"):
		w("HTTP/1.1 302 Found\r\nLocation: " + strings.ReplaceAll(path[len("/abs/"):], "_", "/") + "\r\nContent-Length: 0\r\n\r\n")
	case strings.HasPrefix(path, "/loop/"):
		n, _ := strconv.Atoi(path[len("/loop/"):])
		w(fmt.Sprintf("HTTP/1.1 302 Found\r\nLocation: /loop/%d\r\nContent-Length: 0\r\n\r\n", n+1))
	case strings.HasPrefix(path, "/chunked"):
		w("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
		for i := range 4 {
			p := fmt.Sprintf("part%d\n", i)
			w(fmt.Sprintf("%x\r\n%s\r\n", len(p), p))
			time.Sleep(50 * time.Millisecond)
		}
		w("0\r\n\r\n")
	case strings.HasPrefix(path, "/slow"):
		time.Sleep(1500 * time.Millisecond)
		w("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	case strings.HasPrefix(path, "/stall"):
		w("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nab")
		time.Sleep(1500 * time.Millisecond)
		w("cdefghij")
	case strings.HasPrefix(path, "/big/"): // N bytes of a known pattern, written as fast as they are taken
		n, _ := strconv.ParseInt(path[len("/big/"):], 10, 64)
		w(fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", n))
		chunk := bytes.Repeat([]byte("0123456789abcdef"), 4096)
		for n > 0 {
			k, err := c.Write(chunk[:min(int64(len(chunk)), n)])
			s.bigWritten.Add(int64(k))
			if err != nil {
				return false
			}
			n -= int64(k)
		}
	case strings.HasPrefix(path, "/hold"): // a stream that stays open until the connection ends
		w("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nab")
		var b [1]byte
		c.Read(b[:])
		return false
	case strings.HasPrefix(path, "/untilclose"):
		w("HTTP/1.1 200 OK\r\n\r\nuntil close body")
		shut()
		return false
	case strings.HasPrefix(path, "/truncated"):
		w("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort")
		shut()
		return false
	case strings.HasPrefix(path, "/truncchunk"):
		w("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
		time.Sleep(100 * time.Millisecond)
		shut()
		return false
	case strings.HasPrefix(path, "/gzip"):
		z, _ := hex.DecodeString("1f8b0800000000000203abca2c28484d01005768c2e206000000") // Python's gzip of "zipped", mtime 0
		w(fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n", len(z)) + string(z))
	case strings.HasPrefix(path, "/garbage"):
		w("NOT HTTP\r\n\r\n")
		return false
	case strings.HasPrefix(path, "/nobody"):
		w("HTTP/1.1 204 No Content\r\nX-A: 1\r\n\r\n")
	case strings.HasPrefix(path, "/continue"):
		w("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	case strings.HasPrefix(path, "/fold"):
		w("HTTP/1.1 200 OK\r\nX-Fold: a\r\n b\r\nContent-Length: 0\r\n\r\n")
		return false
	case strings.HasPrefix(path, "/empty"):
		w("HTTP/1.1 200 OK\r\nX-Empty:\r\nX-Sp:   v  \r\nContent-Length: 0\r\n\r\n")
	case strings.HasPrefix(path, "/http10"):
		w("HTTP/1.0 200 OK\r\n\r\nten")
		shut()
		return false
	default:
		w(fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Multi: a\r\nX-MULTI: b\r\nContent-Length: %d\r\n\r\n", len(raw)) + string(raw))
	}
	return true
}

// httpReplay is testdata/http_replay.json (see http_record.py).
type httpReplay struct {
	Cases []struct {
		Name          string           `json:"name"`
		Phase         string           `json:"phase"`
		Method        string           `json:"method"`
		Request       json.RawMessage  `json:"request"`
		Expect        map[string]any   `json:"expect"`
		Notifications []map[string]any `json:"notifications"`
	} `json:"cases"`
}

// decodeHTTPAnswer puts a response or notification in the recording's
// form: bodies decoded, the content-length of an echoed request "$LEN"
// (it depends on the port's digits).
func decodeHTTPAnswer(t *testing.T, m map[string]any) map[string]any {
	m = normalize(m).(map[string]any)
	if r, ok := m["result"].(map[string]any); ok {
		if b64, ok := r["bodyBase64"].(string); ok {
			b, err := base64.StdEncoding.DecodeString(b64)
			if err != nil {
				t.Fatal(err)
			}
			delete(r, "bodyBase64")
			r["body"] = latin1(b)
		}
		if strings.Contains(r["body"].(string), " HTTP/1.1\r\n") {
			for _, h := range r["headers"].([]any) {
				if h := h.(map[string]any); h["name"] == "content-length" {
					h["value"] = "$LEN"
				}
			}
		}
	}
	if p, ok := m["params"].(map[string]any); ok {
		b, err := base64.StdEncoding.DecodeString(p["deltaBase64"].(string))
		if err != nil {
			t.Fatal(err)
		}
		delete(p, "deltaBase64")
		p["delta"] = latin1(b)
	}
	return m
}

// TestHTTPRequestReplay sends the recorded http/request cases — before
// initialize, before initialized and after the handshake; decoding and
// validation errors in the reference's order; buffered and streamed
// bodies; redirects, timeouts, broken responses — to a loopback server
// made here, over stdio and WebSocket, and expects the reference's
// answers and notifications (testdata/http_replay.json).
func TestHTTPRequestReplay(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/http_replay.json")
	if err != nil {
		t.Fatal(err)
	}
	var rp httpReplay
	if err := json.Unmarshal(data, &rp); err != nil {
		t.Fatal(err)
	}
	if len(rp.Cases) < 100 {
		t.Fatalf("only %d recorded cases", len(rp.Cases))
	}
	for _, tr := range []struct {
		name string
		open func(*testing.T, []string) *cx
	}{{"stdio", cxStdioEnv}, {"ws", cxWSEnv}} {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			srv := newHTTPTestServer(t)
			sub := func(s string) string {
				return strings.ReplaceAll(strings.ReplaceAll(s, "$URL", srv.URL), "$PORT", srv.Port)
			}
			undo := func(v any) any {
				b, _ := json.Marshal(v)
				s := strings.ReplaceAll(strings.ReplaceAll(string(b), srv.URL, "$URL"), srv.Port, "$PORT")
				var out any
				_ = json.Unmarshal([]byte(s), &out)
				return out
			}
			c := tr.open(t, []string{"RM_TOKEN=s3cr3t-token"})
			phase := "pre-init"
			for _, rc := range rp.Cases {
				if phase == "pre-init" && rc.Phase != phase {
					result(t, c.call("initialize", map[string]any{"clientName": "e2e"}))
					phase = "pre-initialized"
				}
				if phase == "pre-initialized" && rc.Phase != phase {
					c.write(`{"method":"initialized"}`)
					phase = "ready"
				}
				id := c.nextID
				c.nextID++
				req := map[string]any{"id": id, "method": rc.Method}
				if string(rc.Request) != `"$ABSENT"` {
					req["params"] = json.RawMessage(sub(string(rc.Request)))
				}
				b, _ := json.Marshal(req)
				c.notifs = nil
				c.write(string(b))
				got := c.wait(id, 15*time.Second)
				delete(got, "id")
				if g, w := undo(decodeHTTPAnswer(t, got)), normalize(rc.Expect); !reflect.DeepEqual(g, w) {
					gb, _ := json.Marshal(g)
					wb, _ := json.Marshal(w)
					t.Errorf("%s:\n got %s\nwant %s", rc.Name, gb, wb)
					continue
				}
				if len(rc.Notifications) == 0 {
					continue
				}
				var gotN []map[string]any
				for _, n := range c.bodyDeltas(t, 10*time.Second) {
					gotN = append(gotN, undo(decodeHTTPAnswer(t, n)).(map[string]any))
				}
				wantN := normalize(rc.Notifications).([]any)
				var want []map[string]any
				for _, n := range wantN {
					want = append(want, n.(map[string]any))
				}
				if g, w := streamSummary(gotN), streamSummary(want); !reflect.DeepEqual(g, w) {
					gb, _ := json.Marshal(gotN)
					wb, _ := json.Marshal(want)
					t.Errorf("%s notifications:\n got %s\nwant %s", rc.Name, gb, wb)
				}
			}
		})
	}
}

// bodyDeltas returns the http/request/bodyDelta notifications up to the
// one with done, those already seen first.
func (c *cx) bodyDeltas(t *testing.T, timeout time.Duration) []map[string]any {
	t.Helper()
	var out []map[string]any
	take := func(m map[string]any) bool {
		if m["method"] != "http/request/bodyDelta" {
			t.Fatalf("unexpected message %v", m)
		}
		out = append(out, m)
		return m["params"].(map[string]any)["done"] == true
	}
	for len(c.notifs) > 0 {
		m := c.notifs[0]
		c.notifs = c.notifs[1:]
		if take(m) {
			return out
		}
	}
	deadline := time.After(timeout)
	for {
		select {
		case m, ok := <-c.in:
			if !ok {
				t.Fatal("connection closed waiting for bodyDelta")
			}
			if take(m) {
				return out
			}
		case <-deadline:
			t.Fatalf("no done bodyDelta within %v (got %v)", timeout, out)
		}
	}
}

// latin1 reads each byte as one character, as the recorder decodes bodies.
func latin1(b []byte) string {
	r := make([]rune, len(b))
	for i, c := range b {
		r[i] = rune(c)
	}
	return string(r)
}

// TestHTTPRequestProxyFromEnvironment holds the proxy use to the
// reference's (probed with HTTP_PROXY and HTTPS_PROXY naming a loopback
// server): an http URL is asked of the proxy in absolute form, an https
// one through CONNECT, with the same request lines and headers. The proxy
// here is the test's server, so nothing leaves loopback; the TLS
// handshake through its tunnel fails, as it did for the reference.
func TestHTTPRequestProxyFromEnvironment(t *testing.T) {
	t.Parallel()
	srv := newHTTPTestServer(t)
	c := cxWSEnv(t, []string{"HTTP_PROXY=" + srv.URL, "HTTPS_PROXY=" + srv.URL})
	result(t, c.call("initialize", map[string]any{"clientName": "e2e"}))
	c.write(`{"method":"initialized"}`)
	r := c.call("http/request", map[string]any{"method": "GET", "url": "http://example.invalid/echo", "requestId": "a"})
	if r["error"] != nil {
		t.Fatalf("through the proxy: %v", r["error"])
	}
	got := errorOf(c.call("http/request", map[string]any{"method": "GET", "url": "https://example.invalid/echo", "requestId": "a", "timeoutMs": 5000}))
	if want := "-32603 http/request failed: error sending request for url (https://example.invalid/echo)"; got != want {
		t.Errorf("https through the proxy: %s, want %s", got, want)
	}
	want := []string{"GET http://example.invalid/echo HTTP/1.1\r\naccept: */*\r\nhost: example.invalid\r\n\r\n",
		"CONNECT example.invalid:443 HTTP/1.1\r\nHost: example.invalid:443\r\n\r\n"}
	if reqs := srv.requests(); !reflect.DeepEqual(reqs, want) {
		t.Errorf("the proxy got %q, want the reference's %q", reqs, want)
	}
}

// streamSummary is what a stream of bodyDelta notifications must agree
// on with the recording: the requestId, the body (the deltas joined; how
// it is cut follows the network's reads, on both servers), seqs counting
// from 1 without a gap, and the final notification's done and error.
func streamSummary(notes []map[string]any) map[string]any {
	var body strings.Builder
	dense := true
	var last map[string]any
	for i, n := range notes {
		p := n["params"].(map[string]any)
		dense = dense && n["method"] == "http/request/bodyDelta" && p["seq"] == float64(i+1)
		body.WriteString(p["delta"].(string))
		last = p
	}
	if last == nil {
		return nil
	}
	return map[string]any{"requestId": last["requestId"], "body": body.String(), "dense": dense,
		"done": last["done"], "error": last["error"], "lastDelta": last["delta"]}
}
