package httpreq

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// rawServer is a loopback server that answers each request with what
// answer returns for its head, and records the heads. A false keep ends
// the connection after the answer.
type rawServer struct {
	URL  string
	mu   sync.Mutex
	reqs []string
}

func newRawServer(t *testing.T, answer func(head string, c net.Conn) (keep bool)) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{URL: "http://" + ln.Addr().String()}
	var wg sync.WaitGroup
	var conns sync.Map
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Store(c, true)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					var head strings.Builder
					n := 0
					for {
						l, err := br.ReadString('\n')
						if err != nil {
							return
						}
						head.WriteString(l)
						if l == "\r\n" {
							break
						}
						if v, ok := strings.CutPrefix(l, "content-length: "); ok {
							n, _ = strconv.Atoi(strings.TrimSpace(v))
						}
					}
					body := make([]byte, n)
					io.ReadFull(br, body)
					s.mu.Lock()
					s.reqs = append(s.reqs, head.String()+string(body))
					s.mu.Unlock()
					if !answer(head.String(), c) {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		conns.Range(func(k, _ any) bool { k.(net.Conn).Close(); return true })
		wg.Wait()
	})
	return s
}

func (s *rawServer) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.reqs...)
}

func fixed(resp string, keep bool) func(string, net.Conn) bool {
	return func(_ string, c net.Conn) bool { io.WriteString(c, resp); return keep }
}

func mustURL(t *testing.T, s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func do(t *testing.T, r *Request) (*Response, string, error) {
	t.Helper()
	resp, err := Do(context.Background(), r)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

// TestRequestHead holds the request we write to the reference's (recorded
// in e2e/testdata/http_replay.json, case headers-order-and-case): names
// lower-cased, repeats grouped at the first, then accept, host and
// content-length unless given; the URL's credentials first as basic auth.
func TestRequestHead(t *testing.T) {
	s := newRawServer(t, fixed("HTTP/1.1 204 No Content\r\n\r\n", true))
	u := mustURL(t, s.URL+"/p?q=1#frag")
	_, _, err := do(t, &Request{Method: "post", URL: u, Body: []byte("hello"), Headers: []Header{
		{"X-Zeta", "1"}, {"Content-Type", "text/x"}, {"x-zeta", "2"}, {"Host", "override"}}})
	if err != nil {
		t.Fatal(err)
	}
	u2 := mustURL(t, "http://u:p@"+u.Host+"/")
	if _, _, err := do(t, &Request{Method: "GET", URL: u2, Headers: []Header{{"X-A", "1"}}}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"post /p?q=1 HTTP/1.1\r\nx-zeta: 1\r\nx-zeta: 2\r\ncontent-type: text/x\r\nhost: override\r\naccept: */*\r\ncontent-length: 5\r\n\r\nhello",
		"GET / HTTP/1.1\r\nauthorization: Basic dTpw\r\nx-a: 1\r\naccept: */*\r\nhost: " + u.Host + "\r\n\r\n",
	}
	if got := s.requests(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("requests\n%q\nwant\n%q", got, want)
	}
}

// TestResponseFraming reads every framing a response can have, and the
// ways one can be cut short (each ErrBody).
func TestResponseFraming(t *testing.T) {
	for _, tc := range []struct {
		name, method, resp string
		keep               bool
		status             int
		headers            string
		body               string
		bodyErr            bool
	}{
		{"length", "GET", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nX-A:  v \r\n\r\nabcEXTRA", true, 200, "content-length=3,x-a=v", "abc", false},
		{"chunked", "GET", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n", true, 200, "transfer-encoding=gzip, chunked", "abcde", false},
		{"until close", "GET", "HTTP/1.0 200 OK\r\n\r\nto the end", false, 200, "", "to the end", false},
		{"head", "HEAD", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", true, 200, "content-length=10", "", false},
		{"204", "GET", "HTTP/1.1 204 No Content\r\nX-A: 1\r\n\r\n", true, 204, "x-a=1", "", false},
		{"304", "GET", "HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n", true, 304, "content-length=10", "", false},
		{"interim", "GET", "HTTP/1.1 100 Continue\r\nX-I: 1\r\n\r\nHTTP/1.1 103 Early\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", true, 200, "content-length=2", "ok", false},
		{"repeats in order", "GET", "HTTP/1.1 200 OK\r\nB: 1\r\nA: 2\r\nb: 3\r\nContent-Length: 0\r\n\r\n", true, 200, "b=1,a=2,b=3,content-length=0", "", false},
		{"short length", "GET", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort", false, 200, "content-length=100", "short", true},
		{"short chunked", "GET", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n", false, 200, "transfer-encoding=chunked", "hello", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newRawServer(t, fixed(tc.resp, tc.keep))
			resp, body, err := do(t, &Request{Method: tc.method, URL: mustURL(t, s.URL+"/")})
			if resp == nil {
				t.Fatalf("Do: %v", err)
			}
			var hs []string
			for _, h := range resp.Headers {
				hs = append(hs, h.Name+"="+h.Value)
			}
			if resp.Status != tc.status || strings.Join(hs, ",") != tc.headers || body != tc.body {
				t.Errorf("got %d %q %q, want %d %q %q", resp.Status, hs, body, tc.status, tc.headers, tc.body)
			}
			wantLen := int64(-1)
			switch tc.name {
			case "length":
				wantLen = 3
			case "short length":
				wantLen = 100
			case "head", "204", "304":
				wantLen = 0
			case "interim":
				wantLen = 2
			case "repeats in order":
				wantLen = 0
			}
			if resp.Length != wantLen {
				t.Errorf("Length %d, want %d", resp.Length, wantLen)
			}
			if tc.bodyErr != errors.Is(err, ErrBody) || !tc.bodyErr && err != nil {
				t.Errorf("body error %v, want ErrBody: %v", err, tc.bodyErr)
			}
		})
	}
}

// TestMalformedResponses are send errors naming the URL only: not HTTP,
// a folded header, a header line above 64 KiB, headers above 1 MiB.
func TestMalformedResponses(t *testing.T) {
	many := "HTTP/1.1 200 OK\r\n" + strings.Repeat("X-Pad: "+strings.Repeat("p", 1000)+"\r\n", 1100) + "\r\n"
	for name, resp := range map[string]string{
		"not http":   "NOT HTTP\r\n\r\n",
		"folded":     "HTTP/1.1 200 OK\r\nX-F: a\r\n b\r\n\r\n",
		"long line":  "HTTP/1.1 200 OK\r\nX-L: " + strings.Repeat("l", 70<<10) + "\r\n\r\n",
		"many lines": many,
		"bad name":   "HTTP/1.1 200 OK\r\nX Y: 1\r\n\r\n",
		"bad status": "HTTP/1.1 2000 OK\r\n\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			s := newRawServer(t, fixed(resp, false))
			_, _, err := do(t, &Request{Method: "GET", URL: mustURL(t, s.URL)})
			var se *SendError
			if !errors.As(err, &se) || err.Error() != "error sending request for url ("+s.URL+"/)" {
				t.Errorf("error %v, want a SendError naming %s/", err, s.URL)
			}
		})
	}
}

// TestRedirects holds the redirect rules to the reference's (recorded
// cases redirect-*): the method change, credentials dropped across
// origins, referer, the limit and the scheme check.
func TestRedirects(t *testing.T) {
	var s *rawServer
	s = newRawServer(t, func(head string, c net.Conn) bool {
		path := strings.Fields(head)[1]
		switch {
		case strings.HasPrefix(path, "/r/"):
			code, to, _ := strings.Cut(path[3:], "/")
			io.WriteString(c, "HTTP/1.1 "+code+" Moved\r\nLocation: "+strings.ReplaceAll(to, "_", "/")+"\r\nContent-Length: 0\r\n\r\n")
		case strings.HasPrefix(path, "/loop/"):
			n, _ := strconv.Atoi(path[6:])
			io.WriteString(c, "HTTP/1.1 302 Found\r\nLocation: /loop/"+strconv.Itoa(n+1)+"\r\nContent-Length: 0\r\n\r\n")
		default:
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
		return true
	})
	port := mustURL(t, s.URL).Port()
	auth := []Header{{"Authorization", "x"}, {"Cookie", "c"}, {"Content-Type", "t"}}
	cases := []struct {
		name, method, path string
		follow             bool
		last               string // the last request's head
		status             int
		err                string
	}{
		{"302 post to get", "POST", "/r/302/_end", true, "GET /end HTTP/1.1\r\nauthorization: x\r\ncookie: c\r\nreferer: " + s.URL + "/r/302/_end\r\naccept: */*\r\nhost: 127.0.0.1:" + port + "\r\n\r\n", 200, ""},
		{"307 keeps post", "POST", "/r/307/_end", true, "POST /end HTTP/1.1\r\nauthorization: x\r\ncookie: c\r\ncontent-type: t\r\nreferer: " + s.URL + "/r/307/_end\r\naccept: */*\r\nhost: 127.0.0.1:" + port + "\r\ncontent-length: 2\r\n\r\nhi", 200, ""},
		{"303 head stays head", "HEAD", "/r/303/_end", true, "HEAD /end HTTP/1.1\r\nauthorization: x\r\ncookie: c\r\ncontent-type: t\r\nreferer: " + s.URL + "/r/303/_end\r\naccept: */*\r\nhost: 127.0.0.1:" + port + "\r\ncontent-length: 2\r\n\r\nhi", 200, ""},
		{"cross origin", "GET", "/r/302/http:__localhost:" + port + "_end", true, "GET /end HTTP/1.1\r\ncontent-type: t\r\nreferer: " + s.URL + "/\r\naccept: */*\r\nhost: localhost:" + port + "\r\ncontent-length: 2\r\n\r\nhi", 200, ""},
		{"stop", "GET", "/r/302/_end", false, "", 302, ""},
		{"loop", "GET", "/loop/0", true, "", 0, "too many redirects"},
		{"scheme", "GET", "/r/302/file:___etc_passwd", true, "", 0, "redirect target uses unsupported URL scheme: file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := len(s.requests())
			resp, _, err := do(t, &Request{Method: tc.method, URL: mustURL(t, s.URL+tc.path), Headers: auth, Body: []byte("hi"), Follow: tc.follow})
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %s", err, tc.err)
				}
				if tc.name == "loop" && len(s.requests())-n != MaxRedirects+1 {
					t.Errorf("%d requests, want %d", len(s.requests())-n, MaxRedirects+1)
				}
				return
			}
			if err != nil || resp.Status != tc.status {
				t.Fatalf("%v %v, want status %d", resp, err, tc.status)
			}
			reqs := s.requests()
			if tc.last != "" && reqs[len(reqs)-1] != tc.last {
				t.Errorf("last request\n%q\nwant\n%q", reqs[len(reqs)-1], tc.last)
			}
		})
	}
}

// TestDeadline: before the headers a deadline is a send error; in the
// body it is ErrBody; and cancelling the context closes the connection.
func TestDeadline(t *testing.T) {
	s := newRawServer(t, func(head string, c net.Conn) bool {
		if strings.Contains(head, "/slow") {
			time.Sleep(500 * time.Millisecond)
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nab")
		var b [1]byte
		c.Read(b[:]) // until the client closes
		return false
	})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := Do(ctx, &Request{Method: "GET", URL: mustURL(t, s.URL+"/slow")}); !errors.As(err, new(*SendError)) {
		t.Errorf("deadline before the headers: %v, want a SendError", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	resp, err := Do(ctx, &Request{Method: "GET", URL: mustURL(t, s.URL+"/stall")})
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "ab" || !errors.Is(err, ErrBody) {
		t.Errorf("deadline in the body: %q %v, want ab and ErrBody", b, err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	resp, err = Do(ctx, &Request{Method: "GET", URL: mustURL(t, s.URL+"/stall")})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := io.ReadAll(resp.Body); !errors.Is(err, ErrBody) {
		t.Errorf("after cancel: %v, want ErrBody", err)
	}
	resp.Body.Close()
}

func TestValidation(t *testing.T) {
	for s, want := range map[string]bool{"GET": true, "post": true, "M-SEARCH": true, "": false, "GE T": false, "GET\n": false, "Ä": false, "a:b": false} {
		if ValidMethod(s) != want || ValidHeaderName(s) != want {
			t.Errorf("%q: ValidMethod %v, ValidHeaderName %v, want %v", s, ValidMethod(s), ValidHeaderName(s), want)
		}
	}
	for s, want := range map[string]bool{"": true, " v ": true, "a\tb": true, "aé": true, "a\nb": false, "a\rb": false, "a\x00": false, "a\x7f": false} {
		if ValidHeaderValue(s) != want {
			t.Errorf("ValidHeaderValue(%q) = %v", s, !want)
		}
	}
}

func TestDisplay(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:1":       "http://127.0.0.1:1/",
		"http://x:80/a?b#c":        "http://x/a?b",
		"https://x:443/":           "https://x/",
		"https://x:8443/p":         "https://x:8443/p",
		"http://[::1]:9/":          "http://[::1]:9/",
		"http://h/ech%20o/ü?x=ü y": "http://h/ech%20o/%C3%BC?x=%C3%BC%20y",
		"http://u:p@h/":            "http://u:p@h/",
	} {
		if got := Display(mustURL(t, in)); got != want {
			t.Errorf("Display(%s) = %s, want %s", in, got, want)
		}
	}
}

// TestTLS makes a request over TLS to a loopback server whose certificate
// the client trusts, with the request head ours and HTTP/1.1 offered; the
// same without that trust is a send error.
func TestTLS(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Proto", r.Proto)
		io.WriteString(w, r.Header.Get("X-Order")+" "+r.Host)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	u := mustURL(t, srv.URL+"/p")
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	resp, body, err := do(t, &Request{Method: "GET", URL: u, Headers: []Header{{"X-Order", "1"}}, TLS: &tls.Config{RootCAs: roots}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != 200 || body != "1 "+u.Host || headerValue(resp.Headers, "x-proto") != "HTTP/1.1" {
		t.Errorf("over TLS: %d %q %v", resp.Status, body, resp.Headers)
	}
	_, _, err = do(t, &Request{Method: "GET", URL: u})
	if !errors.As(err, new(*SendError)) || err.Error() != "error sending request for url ("+srv.URL+"/p)" {
		t.Errorf("untrusted certificate: %v, want a SendError", err)
	}
}
