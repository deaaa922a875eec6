package netproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The test bed of spec §0, with no network namespace: Options.Resolve
// answers the bed's names and Options.Dial routes every address to a
// server on 127.0.0.1, so nothing leaves loopback whatever the proxy
// decides. Dial records what the proxy asked for, which is what the
// attack tests assert on.
var (
	pub  = netip.MustParseAddr("93.184.216.34")
	pub2 = netip.MustParseAddr("93.184.216.35")
	pub6 = netip.MustParseAddr("2606:2800:220:1:248:1893:25c8:1946")
)

func addrs(s ...string) []netip.Addr {
	out := make([]netip.Addr, len(s))
	for i, a := range s {
		out[i] = netip.MustParseAddr(a)
	}
	return out
}

// bedNames is the bed's /etc/hosts.
var bedNames = map[string][]netip.Addr{
	"other.org":              {pub2},
	"rebind.example.com":     addrs("10.231.0.1"),
	"loop.example.com":       addrs("127.0.0.1"),
	"multi.example.com":      {pub, netip.MustParseAddr("10.231.0.1")},
	"multi6.example.com":     {pub6, netip.MustParseAddr("fd00::1")},
	"public6.example.com":    {pub6},
	"ula.example.com":        addrs("fd12:3456::1"),
	"mapped.example.com":     addrs("::ffff:10.231.0.1"),
	"mappedpub.example.com":  addrs("::ffff:93.184.216.34"),
	"nat64.example.com":      addrs("64:ff9b::a00:1"),
	"nat64pub.example.com":   addrs("64:ff9b::5db8:d822"),
	"sixtofour.example.com":  addrs("2002:a00:1::1"),
	"linklocal6.example.com": addrs("fe80::1"),
	"sitelocal.example.com":  addrs("fec0::1"),
	"zero.example.com":       addrs("0.0.0.0"),
	"cgnat.example.com":      addrs("100.64.0.7"),
	"ll.example.com":         addrs("169.254.7.7"),
	"decimal.example.com":    addrs("127.0.0.1"),
	"2130706433":             addrs("127.0.0.1"),
}

func bedResolve(_ context.Context, host string) ([]netip.Addr, error) {
	if a, ok := bedNames[host]; ok {
		return slices.Clone(a), nil
	}
	if host == "nx.example.com" {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	if host == "example.com" || strings.HasSuffix(host, ".example.com") || strings.HasSuffix(host, ".other.org") || host == "exaxmple.com" {
		return []netip.Addr{pub}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// Ports with a meaning on the bed's upstreams.
const (
	portClosed  = 9    // the upstream refuses
	portTimeout = 10   // the upstream never answers the SYN
	portGreeter = 7000 // a raw TCP greeter that echoes until EOF
	portGarbage = 7001 // answers anything with a non-HTTP line
)

type bed struct {
	t         testing.TB
	p         *Proxy
	httpAddr  string
	socksAddr string
	web       *httptest.Server
	greeter   *rawServer
	garbage   *rawServer
	closed    string // a loopback address nobody listens on

	mu      sync.Mutex
	events  []Event
	dials   []netip.AddrPort
	lookups atomic.Int32
}

// rawServer is a loopback TCP server running one function per
// connection; close stops it and waits for every connection.
type rawServer struct {
	l  net.Listener
	wg sync.WaitGroup
	mu sync.Mutex
	cs map[net.Conn]bool
}

func newRawServer(t testing.TB, serve func(net.Conn)) *rawServer {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{l: l, cs: map[net.Conn]bool{}}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.cs[c] = true
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				serve(c)
			}()
		}
	}()
	t.Cleanup(s.close)
	return s
}

func (s *rawServer) close() {
	s.l.Close()
	s.mu.Lock()
	for c := range s.cs {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *rawServer) addr() string { return s.l.Addr().String() }

// webHandler answers what it was asked, so a test sees what the proxy
// relayed.
func webHandler(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/bulk" {
		w.Header().Set("Content-Length", fmt.Sprint(bulkSize))
		for n := 0; n < bulkSize; n += len(bigBody) {
			w.Write(bigBody)
		}
		return
	}
	if r.URL.Path == "/big" {
		w.Header().Set("Content-Length", fmt.Sprint(len(bigBody)))
		w.Write(bigBody)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var hs []string
	for k := range r.Header {
		hs = append(hs, k)
	}
	slices.Sort(hs)
	w.Header().Set("X-Seen-Headers", strings.Join(hs, ","))
	fmt.Fprintf(w, "upstream %s host=%s uri=%s body=%q", r.Method, r.Host, r.RequestURI, body)
}

var bigBody = make([]byte, 1<<20)

const bulkSize = 100 << 20 // a multiple of len(bigBody)

type bedOption func(*Settings, *Options)

func newBed(t testing.TB, s Settings, opts ...bedOption) *bed {
	t.Helper()
	b := &bed{t: t}
	b.web = httptest.NewServer(http.HandlerFunc(webHandler))
	t.Cleanup(b.web.Close)
	b.greeter = newRawServer(t, func(c net.Conn) {
		io.WriteString(c, "hello\n")
		io.Copy(c, c)
		c.(*net.TCPConn).CloseWrite()
	})
	b.garbage = newRawServer(t, func(c net.Conn) {
		c.Read(make([]byte, 4096))
		io.WriteString(c, "garbage not http\n")
	})
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	b.closed = l.Addr().String()
	l.Close()
	o := Options{
		Resolve: func(ctx context.Context, host string) ([]netip.Addr, error) {
			b.lookups.Add(1)
			return bedResolve(ctx, host)
		},
		Dial:       b.dial,
		OnDecision: func(e Event) { b.mu.Lock(); b.events = append(b.events, e); b.mu.Unlock() },
	}
	for _, f := range opts {
		f(&s, &o)
	}
	pol, err := Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	o.Policy = pol
	b.p = New(o)
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b.httpAddr, b.socksAddr = hl.Addr().String(), sl.Addr().String()
	b.p.ServeHTTP(hl)
	b.p.ServeSOCKS5(sl)
	t.Cleanup(func() { b.p.Close() })
	return b
}

// dial routes the bed's addresses to loopback servers by port; a real
// loopback address keeps its port (the "host loopback" of the bed).
func (b *bed) dial(ctx context.Context, network string, ap netip.AddrPort) (net.Conn, error) {
	b.mu.Lock()
	b.dials = append(b.dials, ap)
	b.mu.Unlock()
	var target string
	switch {
	case ap.Addr().Is4() && ap.Addr().As4()[0] == 127:
		target = net.JoinHostPort("127.0.0.1", fmt.Sprint(ap.Port()))
	case ap.Port() == portClosed:
		target = b.closed
	case ap.Port() == portTimeout:
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}
	case ap.Port() == portGreeter:
		target = b.greeter.addr()
	case ap.Port() == portGarbage:
		target = b.garbage.addr()
	default:
		target = strings.TrimPrefix(b.web.URL, "http://")
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", target)
}

func (b *bed) lastEvent() Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.events) == 0 {
		b.t.Fatal("no decision was reported")
	}
	return b.events[len(b.events)-1]
}

// eventCount is how many decisions were reported so far.
func (b *bed) eventCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.events)
}

func (b *bed) dialled() []netip.AddrPort {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.dials)
}

// raw sends one request on a new connection to addr and returns all the
// answer (read until the proxy closes or goes quiet for 300 ms after the
// first byte).
func raw(t testing.TB, addr, req string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	return readAll(c)
}

func readAll(c net.Conn) string {
	var out []byte
	buf := make([]byte, 64<<10)
	deadline := time.Now().Add(5 * time.Second)
	for {
		wait := deadline
		if len(out) > 0 {
			wait = time.Now().Add(300 * time.Millisecond)
		}
		c.SetReadDeadline(wait)
		n, err := c.Read(buf)
		out = append(out, buf[:n]...)
		if err != nil {
			return string(out)
		}
	}
}

var dateRE = regexp.MustCompile(`(?m)^date: [^\r]*\r$`)

// undate replaces the date header's value, the one varying part of a
// recorded answer.
func undate(s string) string { return dateRE.ReplaceAllString(s, "date: DATE\r") }

// get sends a GET in absolute form for url through the bed's HTTP proxy
// and returns the parsed answer and its body.
func (b *bed) do(method, url, extra string) (*http.Response, string) {
	b.t.Helper()
	c, err := net.Dial("tcp", b.httpAddr)
	if err != nil {
		b.t.Fatal(err)
	}
	defer c.Close()
	host := strings.SplitN(strings.TrimPrefix(url, "http://"), "/", 2)[0]
	fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", method, url, host, extra)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: method})
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, url, err)
	}
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

func isRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }
