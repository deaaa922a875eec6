package e2e

import (
	"hash/fnv"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// startProxy runs a tiny HTTP/WebSocket load balancer on loopback in
// front of backends (ws:// URLs): sticky routes every request by the hash
// of its X-Client-Id header, as a balancer with client affinity does;
// otherwise it takes the backends in turn. It returns the proxy's ws://
// URL.
func startProxy(t *testing.T, backends []string, sticky bool) string {
	t.Helper()
	var next atomic.Uint32
	targets := make([]*url.URL, len(backends))
	for i, b := range backends {
		targets[i], _ = url.Parse(httpURL(b))
	}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		i := int(next.Add(1)-1) % len(targets)
		if sticky {
			h := fnv.New32a()
			h.Write([]byte(r.In.Header.Get("X-Client-Id")))
			i = int(h.Sum32() % uint32(len(targets)))
		}
		r.SetURL(targets[i])
	}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: rp}}
	srv.Start()
	t.Cleanup(srv.Close)
	return "ws://" + strings.TrimPrefix(srv.URL, "http://")
}

// TestResumeBehindBalancer backs docs/operations.md §11: two servers
// behind a balancer. A session lives in one server's memory and its id
// travels inside initialize, so the balancer cannot route on it: with
// client affinity (sticky on a client header) a dropped client resumes its
// session and reads what its process printed meanwhile; with plain
// rotation the resume reaches the other server, which does not know the
// session.
func TestResumeBehindBalancer(t *testing.T) {
	t.Parallel()
	backends := []string{startServer(t, "--session-ttl", "30s").URL, startServer(t, "--session-ttl", "30s").URL}
	for _, sticky := range []bool{true, false} {
		proxy := startProxy(t, backends, sticky)
		hdr := map[string]string{"X-Client-Id": "agent-7"}
		c := dial(t, proxy, hdr)
		sid := c.handshake()
		c.ok("process/start", startParams("p", "/bin/sh", "-c", "sleep 0.3; echo while-away; sleep 30"), nil)
		c.close()
		time.Sleep(500 * time.Millisecond) // the output comes while no one is attached
		r := dial(t, proxy, hdr)
		res := r.resume(sid)
		if !sticky {
			if res.Error == nil || res.Error.Code != -32600 || res.Error.Message != "unknown session id "+sid {
				t.Errorf("rotation: the resume reached the session's server (%s %+v); the test shows nothing", res.Result, res.Error)
			}
			continue
		}
		if res.Error != nil {
			t.Fatalf("sticky: resume refused: %d %s", res.Error.Code, res.Error.Message)
		}
		r.sendRaw(`{"method":"initialized"}`)
		var rd readRes
		r.ok("process/read", map[string]any{"processId": "p", "afterSeq": 0, "waitMs": 5000}, &rd)
		if !strings.Contains(rd.text(), "while-away") {
			t.Errorf("sticky: the resumed session read %q, want the output printed while away", rd.text())
		}
		r.ok("process/terminate", map[string]any{"processId": "p"}, nil)
	}
}
