package netproxy

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// Answers recorded from the reference's proxy (0.169.0, process/start
// with networkProxy, domains {"127.0.0.1": allow, "evil.example.com":
// deny, "*.example.com": allow}, 2026-11-29), date value blanked.
const (
	recNotAllowed = "HTTP/1.1 403 Forbidden\r\ncontent-type: application/json\r\nx-proxy-error: blocked-by-allowlist\r\ncontent-length: 172\r\ndate: DATE\r\n\r\n" +
		`{"status":"blocked","host":"other.org","reason":"not_allowed","decision":"deny","source":"baseline_policy","protocol":"http","port":80,"message":"Domain not in allowlist."}`
	recDenied = "HTTP/1.1 403 Forbidden\r\ncontent-type: application/json\r\nx-proxy-error: blocked-by-denylist\r\ncontent-length: 186\r\ndate: DATE\r\n\r\n" +
		`{"status":"blocked","host":"evil.example.com","reason":"denied","decision":"deny","source":"baseline_policy","protocol":"http","port":80,"message":"Domain denied by the sandbox policy."}`
	recLocal = "HTTP/1.1 403 Forbidden\r\ncontent-type: application/json\r\nx-proxy-error: blocked-by-allowlist\r\ncontent-length: 207\r\ndate: DATE\r\n\r\n" +
		`{"status":"blocked","host":"10.0.0.1","reason":"not_allowed_local","decision":"deny","source":"baseline_policy","protocol":"http","port":80,"message":"Sandbox policy blocks local/private network addresses."}`
	recConnectNotAllowed = "HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\nx-proxy-error: blocked-by-allowlist\r\ncontent-length: 24\r\ndate: DATE\r\n\r\nDomain not in allowlist."
	recConnectDenied     = "HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\nx-proxy-error: blocked-by-denylist\r\ncontent-length: 36\r\ndate: DATE\r\n\r\nDomain denied by the sandbox policy."
	recBadGateway        = "HTTP/1.1 502 Bad Gateway\r\ncontent-type: text/plain\r\ncontent-length: 16\r\ndate: DATE\r\n\r\nupstream failure"
	recBadHost           = "HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain\r\ncontent-length: 19\r\ndate: DATE\r\n\r\ninvalid Host header"
	recConnectOK         = "HTTP/1.1 200 OK\r\ndate: DATE\r\n\r\n"
	recMethod            = "HTTP/1.1 403 Forbidden\r\ncontent-type: application/json\r\nx-proxy-error: blocked-by-method-policy\r\ncontent-length: 188\r\ndate: DATE\r\n\r\n" +
		`{"status":"blocked","host":"127.0.0.1","reason":"method_not_allowed","decision":"deny","source":"mode_guard","protocol":"http","port":36385,"message":"Method not allowed in limited mode."}`
	recMITM = "HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\nx-proxy-error: blocked-by-mitm-required\r\ncontent-length: 32\r\ndate: DATE\r\n\r\nMITM required for limited HTTPS."
)

var recordedDomains = map[string]Action{"127.0.0.1": Allow, "evil.example.com": Deny, "*.example.com": Allow}

// TestHTTPRecorded replays the recorded requests and compares the
// answers byte for byte (the date's value aside).
func TestHTTPRecorded(t *testing.T) {
	b := newBed(t, Settings{Domains: recordedDomains})
	for _, tc := range []struct{ req, want string }{
		{"GET http://other.org/ HTTP/1.1\r\nHost: other.org\r\n\r\n", recNotAllowed},
		{"GET http://evil.example.com/ HTTP/1.1\r\nHost: evil.example.com\r\n\r\n", recDenied},
		{"GET http://10.0.0.1/ HTTP/1.1\r\nHost: 10.0.0.1\r\n\r\n", recLocal},
		{"GET /relative HTTP/1.1\r\nHost: other.org\r\n\r\n", recNotAllowed},
		{"CONNECT other.org:443 HTTP/1.1\r\nHost: other.org:443\r\n\r\n", recConnectNotAllowed},
		{"CONNECT evil.example.com:443 HTTP/1.1\r\nHost: evil.example.com:443\r\n\r\n", recConnectDenied},
		{"GET http://[::1]/ HTTP/1.1\r\nHost: [::1]\r\n\r\n", recBadHost},
		{"GET http://api.example.com:7001/ HTTP/1.1\r\nHost: api.example.com:7001\r\n\r\n", recBadGateway},
		{"POST http://api.example.com:7001/ HTTP/1.1\r\nHost: api.example.com:7001\r\nContent-Length: 0\r\n\r\n", recBadGateway},
	} {
		if got := undate(raw(t, b.httpAddr, tc.req)); got != tc.want {
			t.Errorf("%q:\n got %q\nwant %q", strings.SplitN(tc.req, "\r\n", 2)[0], got, tc.want)
		}
	}
	// A refused request leaves the connection open for the next one, as
	// the reference's did.
	c, err := net.Dial("tcp", b.httpAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	for range 2 {
		io.WriteString(c, "GET http://other.org/ HTTP/1.1\r\nHost: other.org\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != 403 {
			t.Fatalf("kept-alive refusal: %v %v", resp, err)
		}
		io.Copy(io.Discard, resp.Body)
	}
}

// TestHTTPMatching is spec §4.1 through the listener: what is allowed is
// relayed to the upstream, what is not gets its 403 and reason.
func TestHTTPMatching(t *testing.T) {
	for _, tc := range []struct {
		domains map[string]Action
		url     string
		reason  string // "allow" when relayed
	}{
		{map[string]Action{"api.example.com": Allow}, "http://api.example.com/x", "allow"},
		{map[string]Action{"api.example.com": Allow}, "http://API.Example.COM/x", "allow"},
		{map[string]Action{"api.example.com": Allow}, "http://api.example.com./x", "allow"},
		{map[string]Action{"api.example.com": Allow}, "http://other.org/", "not_allowed"},
		{map[string]Action{"*.example.com": Allow, "evil.example.com": Deny}, "http://evil.example.com/", "denied"},
		{map[string]Action{"api.example.com": Allow, "API.example.com": Deny}, "http://api.example.com/", "denied"},
		{map[string]Action{"*.example.com": Allow}, "http://a.b.example.com/", "allow"},
		{map[string]Action{"*.example.com": Allow}, "http://example.com/", "not_allowed"},
		{map[string]Action{"**.example.com": Allow}, "http://example.com/", "allow"},
		{map[string]Action{"*": Allow}, "http://other.org/", "allow"},
		{map[string]Action{"exa*mple.com": Allow}, "http://exaxmple.com/", "allow"},
		{map[string]Action{"*.*.other.org": Allow}, "http://sub.other.org/", "not_allowed"},
		{map[string]Action{"api.other.org:8080": Allow}, "http://api.other.org/", "allow"},
		{map[string]Action{"api.example.com": Allow}, "http://api.example.com:8080/", "allow"},
		{map[string]Action{"93.184.216.34": Allow}, "http://93.184.216.34/", "allow"},
		{nil, "http://api.example.com/", "not_allowed"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			b := newBed(t, Settings{Domains: tc.domains})
			resp, body := b.do("GET", tc.url, "")
			ev := b.lastEvent()
			if tc.reason == "allow" {
				if resp.StatusCode != 200 || !strings.HasPrefix(body, "upstream GET") || !ev.Allowed || ev.Reason != "allow" || ev.Source != SourceBaseline {
					t.Fatalf("%v: %d %q %+v", tc.domains, resp.StatusCode, body, ev)
				}
				return
			}
			if resp.StatusCode != 403 || !strings.Contains(body, `"reason":"`+tc.reason+`"`) || ev.Allowed || ev.Reason != tc.reason {
				t.Fatalf("%v: %d %q %+v", tc.domains, resp.StatusCode, body, ev)
			}
			if len(b.dialled()) != 0 {
				t.Fatalf("a refused request dialled %v", b.dialled())
			}
		})
	}
}

// TestHTTPLocal is spec §4.2's table, both columns.
func TestHTTPLocal(t *testing.T) {
	for _, tc := range []struct {
		domains    map[string]Action
		url        string
		localFalse string
		localTrue  string
	}{
		{map[string]Action{"10.231.0.1": Allow}, "http://10.231.0.1/", "allow", "allow"},
		{map[string]Action{"169.254.7.7": Allow}, "http://169.254.7.7/", "allow", "allow"},
		{map[string]Action{"*": Allow}, "http://10.231.0.1/", "not_allowed_local", "not_allowed"},
		{map[string]Action{"*": Allow}, "http://127.0.0.1/", "not_allowed_local", "not_allowed"},
		{map[string]Action{"*": Allow}, "http://100.64.0.7/", "not_allowed_local", "not_allowed"},
		{map[string]Action{"rebind.example.com": Allow}, "http://rebind.example.com/", "not_allowed_local", "allow"},
		{map[string]Action{"*.example.com": Allow}, "http://cgnat.example.com/", "not_allowed_local", "allow"},
		{map[string]Action{"*.example.com": Allow}, "http://ll.example.com/", "not_allowed_local", "allow"},
		{map[string]Action{"*.example.com": Allow}, "http://nx.example.com/", "not_allowed_local", "502"},
		{map[string]Action{"api.example.com": Allow}, "http://93.184.216.35/", "not_allowed", "not_allowed"},
	} {
		for _, local := range []bool{false, true} {
			want := tc.localFalse
			if local {
				want = tc.localTrue
			}
			t.Run(fmt.Sprintf("%s/local=%v", tc.url, local), func(t *testing.T) {
				b := newBed(t, Settings{Domains: tc.domains, AllowLocalBinding: local})
				resp, body := b.do("GET", tc.url, "")
				switch want {
				case "allow":
					if resp.StatusCode != 200 || !strings.HasPrefix(body, "upstream GET") {
						t.Fatalf("%d %q", resp.StatusCode, body)
					}
				case "502":
					if resp.StatusCode != 502 || body != "upstream failure" {
						t.Fatalf("%d %q", resp.StatusCode, body)
					}
				default:
					if resp.StatusCode != 403 || !strings.Contains(body, `"reason":"`+want+`"`) {
						t.Fatalf("%d %q", resp.StatusCode, body)
					}
					if len(b.dialled()) != 0 {
						t.Fatalf("a refused request dialled %v", b.dialled())
					}
				}
			})
		}
	}
	// Listing 127.0.0.1 reaches the host's loopback, as in the reference
	// ([local.listed_loopback_reaches_host_loopback]).
	b := newBed(t, Settings{Domains: map[string]Action{"127.0.0.1": Allow}})
	resp, body := b.do("GET", b.web.URL+"/lo", "")
	if resp.StatusCode != 200 || !strings.Contains(body, "uri=/lo") {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
}

// TestAttackLocalAddresses: a name or literal that reaches a local
// address by a door the IPv4 private ranges do not cover must be refused
// before anything is dialled, on all three protocols.
func TestAttackLocalAddresses(t *testing.T) {
	hosts := []string{
		"multi.example.com",      // one public and one private answer
		"multi6.example.com",     // public IPv6 and a ULA
		"ula.example.com",        // IPv6 unique local
		"mapped.example.com",     // ::ffff:10.231.0.1
		"nat64.example.com",      // 64:ff9b::10.0.0.1
		"sixtofour.example.com",  // 2002:0a00:0001::
		"linklocal6.example.com", // fe80::1
		"sitelocal.example.com",  // fec0::1
		"zero.example.com",       // 0.0.0.0 reaches the host's loopback
		"decimal.example.com",    // resolves to 127.0.0.1
	}
	literals := []string{"::ffff:127.0.0.1", "::ffff:10.231.0.1", "fd00::1", "::1", "::", "0.0.0.0", "64:ff9b::7f00:1", "fe80::1", "::7f00:1"}
	b := newBed(t, Settings{Domains: map[string]Action{"*": Allow}})
	check := func(what string, got string) {
		t.Helper()
		ev := b.lastEvent()
		if ev.Allowed || ev.Reason != ReasonNotAllowedLocal {
			t.Errorf("%s: answer %q, decision %+v", what, got, ev)
		}
		if d := b.dialled(); len(d) != 0 {
			t.Fatalf("%s: dialled %v", what, d)
		}
	}
	for _, h := range hosts {
		got := raw(t, b.httpAddr, "GET http://"+h+"/ HTTP/1.1\r\nHost: "+h+"\r\nConnection: close\r\n\r\n")
		check("GET "+h, got)
		got = raw(t, b.httpAddr, "CONNECT "+h+":443 HTTP/1.1\r\nHost: "+h+"\r\n\r\n")
		check("CONNECT "+h, got)
		rep, _ := socksConnect(t, b.socksAddr, socksDomain(h, 80))
		check("SOCKS5 "+h, fmt.Sprint(rep))
	}
	for _, l := range literals {
		a := netip.MustParseAddr(l)
		got := raw(t, b.httpAddr, "CONNECT "+net.JoinHostPort(l, "443")+" HTTP/1.1\r\nHost: x\r\n\r\n")
		check("CONNECT "+l, got)
		rep, _ := socksConnect(t, b.socksAddr, socksAddr(a, 80))
		check("SOCKS5 "+l, fmt.Sprint(rep))
		rep, _ = socksConnect(t, b.socksAddr, socksDomain(l, 80))
		check("SOCKS5 name "+l, fmt.Sprint(rep))
	}
	// The global forms of the same families pass.
	for _, h := range []string{"public6.example.com", "mappedpub.example.com", "nat64pub.example.com"} {
		resp, body := b.do("GET", "http://"+h+"/", "")
		if resp.StatusCode != 200 {
			t.Errorf("%s: %d %q", h, resp.StatusCode, body)
		}
	}
}

// TestAttackRebinding: the name is looked up once, checked, and only the
// checked addresses are dialled. The resolver answers a public address
// first and a private one to any later lookup, as a rebinding DNS server
// would.
func TestAttackRebinding(t *testing.T) {
	var n int
	b := newBed(t, Settings{Domains: map[string]Action{"rebinder.example.com": Allow}}, func(_ *Settings, o *Options) {
		o.Resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
			n++
			if n == 1 {
				return []netip.Addr{pub}, nil
			}
			return addrs("10.231.0.1"), nil
		}
	})
	for _, proto := range []string{"http", "connect", "socks"} {
		n = 0
		switch proto {
		case "http":
			resp, body := b.do("GET", "http://rebinder.example.com/", "")
			if resp.StatusCode != 200 {
				t.Fatalf("%d %q", resp.StatusCode, body)
			}
		case "connect":
			got := raw(t, b.httpAddr, "CONNECT rebinder.example.com:80 HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
			if !strings.HasPrefix(got, "HTTP/1.1 200 OK\r\n") {
				t.Fatalf("%q", got)
			}
		case "socks":
			rep, c := socksConnect(t, b.socksAddr, socksDomain("rebinder.example.com", 80))
			if rep != 0 {
				t.Fatalf("reply %d", rep)
			}
			c.Close()
		}
		for _, d := range b.dialled() {
			if isLocal(d.Addr()) {
				t.Fatalf("%s: dialled the rebound address %v (%d lookups)", proto, d, n)
			}
		}
		if n != 1 {
			t.Errorf("%s: %d lookups, want 1", proto, n)
		}
	}
}

// TestHTTPRelay: the relayed request loses its hop-by-hop and Proxy-*
// headers, keeps its body, and the connection carries several requests.
func TestHTTPRelay(t *testing.T) {
	var logs bytes.Buffer
	b := newBed(t, Settings{Domains: map[string]Action{"api.example.com": Allow}}, func(_ *Settings, o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	c, err := net.Dial("tcp", b.httpAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	io.WriteString(c, "POST http://user:hunter2@api.example.com/p?token=hunter2 HTTP/1.1\r\nHost: api.example.com\r\n"+
		"Proxy-Authorization: Basic aHVudGVyMg==\r\nProxy-Connection: keep-alive\r\nConnection: X-Hop\r\nX-Hop: 1\r\nKeep-Alive: 5\r\nX-Kept: yes\r\nContent-Length: 5\r\n\r\nhello")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if string(body) != `upstream POST host=api.example.com uri=/p?token=hunter2 body="hello"` {
		t.Errorf("relayed: %q", body)
	}
	if h := resp.Header.Get("X-Seen-Headers"); h != "Connection,Content-Length,X-Kept" {
		t.Errorf("the upstream saw %q", h)
	}
	// A second request on the same connection, chunked this time.
	io.WriteString(c, "PUT http://api.example.com/2 HTTP/1.1\r\nHost: api.example.com\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
	resp, err = http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	if string(body) != `upstream PUT host=api.example.com uri=/2 body="abc"` {
		t.Errorf("second request: %q", body)
	}
	// HEAD, and a large body on the same connection.
	io.WriteString(c, "HEAD http://api.example.com/big HTTP/1.1\r\nHost: api.example.com\r\n\r\nGET http://api.example.com/big HTTP/1.1\r\nHost: api.example.com\r\n\r\n")
	resp, err = http.ReadResponse(br, &http.Request{Method: "HEAD"})
	if err != nil || resp.ContentLength != int64(len(bigBody)) {
		t.Fatalf("HEAD: %v %v", resp, err)
	}
	resp, err = http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := io.Copy(io.Discard, resp.Body); n != int64(len(bigBody)) {
		t.Errorf("big body: %d bytes", n)
	}
	b.p.Close()
	if strings.Contains(logs.String(), "hunter2") || strings.Contains(logs.String(), "aHVudGVy") || !strings.Contains(logs.String(), "network proxy request allowed") {
		t.Errorf("logs:\n%s", logs.String())
	}
}

// TestHTTPBounds: an oversized head is answered 431, a client silent
// past the handshake timeout is dropped, and connections over the cap
// are closed at once.
func TestHTTPBounds(t *testing.T) {
	b := newBed(t, Settings{Domains: map[string]Action{"*": Allow}}, func(_ *Settings, o *Options) {
		o.HandshakeTimeout = 200 * time.Millisecond
		o.IdleTimeout = 200 * time.Millisecond
		o.MaxConns = 2
	})
	got := raw(t, b.httpAddr, "GET http://a.example.com/ HTTP/1.1\r\nX-Big: "+strings.Repeat("a", MaxHeaderBytes)+"\r\n\r\n")
	if !strings.HasPrefix(got, "HTTP/1.1 431 ") {
		t.Errorf("oversized head: %.80q", got)
	}
	c1, _ := net.Dial("tcp", b.httpAddr)
	defer c1.Close()
	c2, _ := net.Dial("tcp", b.httpAddr)
	defer c2.Close()
	time.Sleep(50 * time.Millisecond)
	c3, _ := net.Dial("tcp", b.httpAddr)
	defer c3.Close()
	c3.SetReadDeadline(time.Now().Add(2 * time.Second))
	if n, err := c3.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("over the cap: read %d %v, want EOF", n, err)
	}
	start := time.Now()
	c1.SetReadDeadline(time.Now().Add(3 * time.Second))
	if _, err := c1.Read(make([]byte, 1)); err != io.EOF || time.Since(start) > 2*time.Second {
		t.Errorf("silent client: %v after %v", err, time.Since(start))
	}
}

// TestHTTPContinue: an interim 100 Continue from the upstream is passed
// on before the final answer.
func TestHTTPContinue(t *testing.T) {
	b := newBed(t, Settings{Domains: map[string]Action{"api.example.com": Allow}})
	got := raw(t, b.httpAddr, "POST http://api.example.com/c HTTP/1.1\r\nHost: api.example.com\r\nExpect: 100-continue\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi")
	if !strings.HasPrefix(got, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n") || !strings.HasSuffix(got, `body="hi"`) {
		t.Errorf("%q", got)
	}
}
