// The proxy group's measuring client (docs/benchmarking.md §3, #P1 and
// #P2): the same codex-bench binary, run as a command by the server under
// test, inside its sandbox, as `codex-bench netclient …`. It makes HTTP
// requests through the proxy the server gave it ($HTTP_PROXY) or, with
// -direct, straight to the destination, and prints one JSON line.

package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"
)

// netClientCommand is the hidden first argument that selects the client.
const netClientCommand = "netclient"

// netClientNoProxy is the client's exit status when it was asked to use
// the proxy but the server gave it no HTTP_PROXY: the server does not
// serve networkProxy.
const netClientNoProxy = 3

// NetClientResult is the client's one line of output.
type NetClientResult struct {
	Proxy   string    `json:"proxy"`             // the HTTP_PROXY it used ("" for direct)
	Direct  string    `json:"direct_connect"`    // what a direct TCP connect to the destination gave: "ok" or the error
	RawMS   []float64 `json:"raw_ms,omitempty"`  // latency mode: every measured request
	Bytes   int64     `json:"bytes,omitempty"`   // bulk mode: body bytes read
	Seconds float64   `json:"seconds,omitempty"` // bulk mode: request to the body's end
}

// netClientMain runs the client with args (after the command word),
// HTTP_PROXY from getenv, its line on stdout and complaints on stderr, and
// returns the exit status.
func netClientMain(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(netClientCommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	target := fs.String("url", "", "the URL to fetch")
	n := fs.Int("n", 0, "latency mode: measured requests, each on a new connection")
	warm := fs.Int("warm", 5, "latency mode: unmeasured requests first")
	bulk := fs.Int64("bulk", 0, "bulk mode: fetch the URL once and expect this many body bytes")
	direct := fs.Bool("direct", false, "ignore the proxy variables and connect to the destination")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "netclient: %v\n", err)
		return 1
	}
	u, err := url.Parse(*target)
	if err != nil || u.Host == "" {
		return fail(fmt.Errorf("bad -url %q", *target))
	}
	var res NetClientResult
	tr := &http.Transport{DisableKeepAlives: true, DisableCompression: true}
	if !*direct {
		res.Proxy = getenv("HTTP_PROXY")
		if res.Proxy == "" {
			fmt.Fprintln(stderr, "netclient: HTTP_PROXY is not set: the server gave the command no proxy")
			return netClientNoProxy
		}
		pu, err := url.Parse(res.Proxy)
		if err != nil {
			return fail(fmt.Errorf("HTTP_PROXY %q: %v", res.Proxy, err))
		}
		tr.Proxy = http.ProxyURL(pu)
	}
	defer tr.CloseIdleConnections()
	// Whether the command could bypass the proxy: recorded, not required
	// (the direct baseline needs it to work).
	port := u.Port()
	if port == "" {
		port = "80"
	}
	if c, err := net.DialTimeout("tcp", net.JoinHostPort(u.Hostname(), port), 2*time.Second); err == nil {
		res.Direct = "ok"
		c.Close()
	} else {
		res.Direct = err.Error()
	}
	cl := &http.Client{Transport: tr, Timeout: 120 * time.Second}
	get := func() (int64, error) {
		resp, err := cl.Get(*target)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		got, err := io.Copy(io.Discard, resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("status %s", resp.Status)
		}
		return got, err
	}
	switch {
	case *bulk > 0:
		t0 := time.Now()
		got, err := get()
		res.Seconds = time.Since(t0).Seconds()
		res.Bytes = got
		if err == nil && got != *bulk {
			err = fmt.Errorf("%d body bytes, want %d", got, *bulk)
		}
		if err != nil {
			return fail(err)
		}
	case *n > 0:
		for i := range *warm + *n {
			t0 := time.Now()
			if _, err := get(); err != nil {
				return fail(fmt.Errorf("request %d: %w", i, err))
			}
			if i >= *warm {
				res.RawMS = append(res.RawMS, ms(time.Since(t0)))
			}
		}
	default:
		return fail(errors.New("give -n or -bulk"))
	}
	if err := json.NewEncoder(stdout).Encode(res); err != nil {
		return fail(err)
	}
	return 0
}
