package netproxy

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func socksDomain(h string, port uint16) []byte {
	b := []byte{5, 1, 0, 3, byte(len(h))}
	b = append(b, h...)
	return binary.BigEndian.AppendUint16(b, port)
}

func socksAddr(a netip.Addr, port uint16) []byte {
	b := []byte{5, 1, 0, 1}
	if a.Is6() {
		b[3] = 4
	}
	b = append(b, a.AsSlice()...)
	return binary.BigEndian.AppendUint16(b, port)
}

// socksConnect greets the SOCKS5 proxy at addr, sends req and returns the
// reply code; on success the connection is returned open (the caller
// closes it), else closed and nil.
func socksConnect(t testing.TB, addr string, req []byte) (byte, net.Conn) {
	t.Helper()
	rep, c := socksExchange(t, addr, req)
	if len(rep) < 2 {
		t.Fatalf("short reply %v", rep)
	}
	if rep[1] != 0 {
		c.Close()
		return rep[1], nil
	}
	return 0, c
}

// socksExchange returns the whole reply (10 or 22 bytes) to req.
func socksExchange(t testing.TB, addr string, req []byte) ([]byte, net.Conn) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	c.Write([]byte{5, 1, 0})
	var greet [2]byte
	if _, err := io.ReadFull(c, greet[:]); err != nil || greet != [2]byte{5, 0} {
		t.Fatalf("greeting: %v %v", greet, err)
	}
	c.Write(req)
	rep := make([]byte, 4)
	if _, err := io.ReadFull(c, rep); err != nil {
		t.Fatalf("reply: %v", err)
	}
	n := 6
	if rep[3] == 4 {
		n = 18
	}
	rest := make([]byte, n)
	io.ReadFull(c, rest)
	c.SetDeadline(time.Time{})
	return append(rep, rest...), c
}

// TestSOCKS5Recorded: the replies recorded from the reference's SOCKS5
// listener (2026-11-29, same policy as TestHTTPRecorded).
func TestSOCKS5Recorded(t *testing.T) {
	b := newBed(t, Settings{Domains: recordedDomains})
	zero := []byte{0, 1, 0, 0, 0, 0, 0, 0}
	lo := netip.MustParseAddr("127.0.0.1")
	_, closedPort, _ := net.SplitHostPort(b.closed)
	var cp uint16
	for _, c := range closedPort {
		cp = cp*10 + uint16(c-'0')
	}
	for _, tc := range []struct {
		name string
		req  []byte
		code byte
	}{
		{"not allowed", socksDomain("other.org", 80), 2},
		{"denied", socksDomain("evil.example.com", 80), 2},
		{"ipv6 not listed", socksAddr(netip.MustParseAddr("::1"), 80), 2},
		{"bind", append([]byte{5, 2, 0, 1, 127, 0, 0, 1}, 0, 80), 7},
		{"udp associate", append([]byte{5, 3, 0, 1, 127, 0, 0, 1}, 0, 80), 7},
		{"closed port", socksAddr(lo, cp), 5},
		{"unknown address type", []byte{5, 1, 0, 9, 0, 80}, 8},
	} {
		rep, c := socksExchange(t, b.socksAddr, tc.req)
		c.Close()
		want := append([]byte{5, tc.code}, zero...)
		if !bytes.Equal(rep, want) {
			t.Errorf("%s: %v, want %v", tc.name, rep, want)
		}
	}
	// Allowed: reply 0 with the upstream connection's local address,
	// then the stream, with half-close passed on.
	rep, c := socksExchange(t, b.socksAddr, socksDomain("api.example.com", portGreeter))
	defer c.Close()
	if rep[1] != 0 || rep[3] != 1 || !bytes.Equal(rep[4:8], []byte{127, 0, 0, 1}) {
		t.Fatalf("allowed: %v", rep)
	}
	c.Write([]byte("ping"))
	c.(*net.TCPConn).CloseWrite()
	got, _ := io.ReadAll(c)
	if string(got) != "hello\nping" {
		t.Errorf("stream: %q", got)
	}
	if ev := b.lastEvent(); !ev.Allowed || ev.Protocol != "socks5_tcp" || ev.Host != "api.example.com" || ev.Port != portGreeter {
		t.Errorf("decision %+v", ev)
	}
}

// TestSOCKS5Failures: an allowed upstream that cannot be reached gets
// its own reply code; a client offering no acceptable method gets 0xff.
func TestSOCKS5Failures(t *testing.T) {
	b := newBed(t, Settings{Domains: map[string]Action{"*.example.com": Allow}})
	if rep, _ := socksConnect(t, b.socksAddr, socksDomain("api.example.com", portTimeout)); rep != 4 {
		t.Errorf("timeout: reply %d", rep)
	}
	if rep, _ := socksConnect(t, b.socksAddr, socksDomain("api.example.com", portClosed)); rep != 5 {
		t.Errorf("refused: reply %d", rep)
	}
	if rep, _ := socksConnect(t, b.socksAddr, socksDomain("nx.example.com", 80)); rep != 2 {
		t.Errorf("unresolved: reply %d", rep)
	}
	c, err := net.Dial("tcp", b.socksAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte{5, 1, 2})
	got, _ := io.ReadAll(c)
	if !bytes.Equal(got, []byte{5, 0xff}) {
		t.Errorf("no acceptable method: %v", got)
	}
	if got := raw(t, b.socksAddr, "GET / HTTP/1.1\r\n\r\n"); got != "" {
		t.Errorf("not SOCKS5: %q", got)
	}
	if !strings.HasPrefix(b.closed, "127.") {
		t.Fatal(b.closed)
	}
}

// TestSOCKS5Decoder: the request decoder on whole and cut requests.
func TestSOCKS5Decoder(t *testing.T) {
	req, err := readSocksRequest(bytes.NewReader(socksDomain("API.Example.com.", 443)))
	if err != nil || req != (socksRequest{cmd: 1, host: "api.example.com", port: 443}) {
		t.Errorf("domain: %+v %v", req, err)
	}
	req, err = readSocksRequest(bytes.NewReader(socksAddr(netip.MustParseAddr("::ffff:10.0.0.1"), 80)))
	if err != nil || req.host != "::ffff:10.0.0.1" {
		t.Errorf("v6: %+v %v", req, err)
	}
	full := socksDomain("api.example.com", 443)
	for i := range len(full) {
		if _, err := readSocksRequest(bytes.NewReader(full[:i])); err == nil {
			t.Errorf("cut at %d: no error", i)
		}
	}
	if _, err := readSocksRequest(bytes.NewReader(socksDomain("", 80))); err == nil {
		t.Error("empty name accepted")
	}
	if _, err := readSocksRequest(bytes.NewReader(socksDomain("a\x00b", 80))); err == nil {
		t.Error("NUL in name accepted")
	}
}

// FuzzSOCKS5Request: the decoder never panics, and what it accepts
// encodes back to a request it decodes the same.
func FuzzSOCKS5Request(f *testing.F) {
	f.Add(socksDomain("api.example.com", 443))
	f.Add(socksAddr(netip.MustParseAddr("10.0.0.1"), 80))
	f.Add(socksAddr(netip.MustParseAddr("fd00::1"), 80))
	f.Add([]byte{5, 2, 0, 1, 127, 0, 0, 1, 0, 80})
	f.Add([]byte{5, 1, 0, 3, 0, 0, 80})
	f.Add([]byte{4, 1, 0, 80})
	f.Fuzz(func(t *testing.T, in []byte) {
		req, err := readSocksRequest(bytes.NewReader(in))
		if err != nil {
			return
		}
		var again []byte
		if a, perr := netip.ParseAddr(req.host); perr == nil && in[3] != 3 {
			again = socksAddr(a, uint16(req.port))
		} else {
			again = socksDomain(req.host, uint16(req.port))
		}
		req2, err := readSocksRequest(bytes.NewReader(again))
		if err != nil || req2 != req {
			t.Fatalf("%v → %+v → %v → %+v %v", in, req, again, req2, err)
		}
	})
}
