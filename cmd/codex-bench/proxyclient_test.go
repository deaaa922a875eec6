package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// runNetClient runs the client with HTTP_PROXY set to proxy ("" for none).
func runNetClient(t *testing.T, proxy string, args ...string) (int, *NetClientResult, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := netClientMain(args, func(k string) string {
		if k == "HTTP_PROXY" {
			return proxy
		}
		return ""
	}, &out, &errb)
	if code != 0 {
		return code, nil, errb.String()
	}
	var res NetClientResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("output %q: %v", out.String(), err)
	}
	return code, &res, errb.String()
}

// TestNetClient: the proxy group's client sends every request to
// $HTTP_PROXY in absolute form on a new connection, times each one,
// fetches a bulk body whole, goes direct with -direct, and exits with
// netClientNoProxy when it was asked to use a proxy it was not given.
// Everything is on loopback: the "proxy" answers by itself.
func TestNetClient(t *testing.T) {
	var viaProxy, conns atomic.Int64
	proxy := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.IsAbs() {
			viaProxy.Add(1)
		}
		if n, ok := strings.CutPrefix(r.URL.Path, "/bytes/"); ok {
			w.Header().Set("Content-Length", n)
			var size int
			fmt.Sscan(n, &size)
			_, _ = w.Write(make([]byte, size))
			return
		}
		_, _ = w.Write([]byte("hello\n"))
	}))
	proxy.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	proxy.Start()
	defer proxy.Close()
	dest := proxy.URL + "/" // a loopback destination; the proxy never dials it

	code, res, stderr := runNetClient(t, proxy.URL, "-url", dest, "-n", "7", "-warm", "2")
	if code != 0 {
		t.Fatalf("latency mode: exit %d, %s", code, stderr)
	}
	if len(res.RawMS) != 7 || res.Proxy != proxy.URL || viaProxy.Load() != 9 {
		t.Errorf("latency mode: %d samples, proxy %q, %d absolute-form requests; want 7, %q, 9", len(res.RawMS), res.Proxy, viaProxy.Load(), proxy.URL)
	}
	if got := conns.Load(); got < 10 { // 9 requests + the direct-connect probe
		t.Errorf("%d connections for 9 requests and a probe: connections were reused", got)
	}

	code, res, stderr = runNetClient(t, proxy.URL, "-url", proxy.URL+"/bytes/300000", "-bulk", "300000")
	if code != 0 || res.Bytes != 300000 || res.Seconds <= 0 {
		t.Errorf("bulk mode: exit %d (%s), result %+v", code, stderr, res)
	}
	if code, _, _ = runNetClient(t, proxy.URL, "-url", proxy.URL+"/bytes/10", "-bulk", "11"); code != 1 {
		t.Errorf("bulk mode with a short body: exit %d, want 1", code)
	}

	before := viaProxy.Load()
	code, res, stderr = runNetClient(t, "", "-url", dest, "-n", "3", "-warm", "0", "-direct")
	if code != 0 || len(res.RawMS) != 3 || res.Proxy != "" || res.Direct != "ok" || viaProxy.Load() != before {
		t.Errorf("direct mode: exit %d (%s), result %+v, %d absolute-form requests", code, stderr, res, viaProxy.Load()-before)
	}

	if code, _, stderr = runNetClient(t, "", "-url", dest, "-n", "1"); code != netClientNoProxy || !strings.Contains(stderr, "HTTP_PROXY is not set") {
		t.Errorf("no proxy given: exit %d, stderr %q; want %d", code, stderr, netClientNoProxy)
	}
}
