package e2e

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestHTTPRequestEnvVarNeverEchoed sends requests whose headers take a
// secret from the server's environment (valueEnvVar) and fail in every
// way a request can — a value the secret makes invalid, a refused
// connection, a timeout, a malformed response, a redirect to another
// scheme, a body cut short while streaming — and one that succeeds
// through a redirect to another origin. The secret reaches the HTTP
// server only where it was sent (not across the origin change), and never
// appears in an answer, a notification or the server's debug log.
func TestHTTPRequestEnvVarNeverEchoed(t *testing.T) {
	const secret = "topsecret-4f9a1c"
	srv := newHTTPTestServer(t)
	s := startServerWith(t, binary, func(cmd *exec.Cmd) {
		cmd.Env = append(cmd.Env, "RM_SECRET="+secret, "RM_BAD_SECRET=x\x01"+secret)
	})
	c := cxDial(t, s.URL)
	result(t, c.call("initialize", map[string]any{"clientName": "e2e"}))
	c.write(`{"method":"initialized"}`)
	auth := []map[string]any{{"name": "Authorization", "value": "Bearer ", "valueEnvVar": "RM_SECRET"}}
	req := func(url string, extra map[string]any) map[string]any {
		p := map[string]any{"method": "GET", "url": url, "requestId": "r", "headers": auth}
		for k, v := range extra {
			p[k] = v
		}
		return p
	}
	var answers []string
	keep := func(m map[string]any) map[string]any {
		b, _ := json.Marshal(m)
		answers = append(answers, string(b))
		return m
	}

	// Delivered, to the origin it was meant for.
	keep(c.call("http/request", req(srv.URL+"/status/200", nil)))
	if got := srv.requests(); len(got) != 1 || !strings.Contains(got[0], "authorization: Bearer "+secret+"\r\n") {
		t.Fatalf("the HTTP server got %q, want the secret in authorization", got)
	}
	// Not across an origin change.
	keep(c.call("http/request", req(srv.URL+"/abs/http:__localhost:"+srv.Port+"_status_200", nil)))
	if got := srv.requests(); len(got) != 3 || strings.Contains(got[2], secret) || !strings.HasPrefix(got[2], "GET /status/200 ") {
		t.Errorf("the redirect's other origin got %q, want no secret", got[2:])
	}
	for _, tc := range []struct {
		name string
		p    map[string]any
		want string
	}{
		{"invalid value", map[string]any{"method": "GET", "url": srv.URL, "requestId": "r", "headers": []map[string]any{{"name": "X-Bad", "value": "v", "valueEnvVar": "RM_BAD_SECRET"}}},
			"-32602 http/request header value is invalid for X-Bad: failed to parse header value"},
		{"refused", req("http://127.0.0.1:1/", nil), "-32603 http/request failed: error sending request for url (http://127.0.0.1:1/)"},
		{"timeout", req(srv.URL+"/slow", map[string]any{"timeoutMs": 100}), "-32603 http/request failed: error sending request for url (" + srv.URL + "/slow)"},
		{"malformed", req(srv.URL+"/garbage", nil), "-32603 http/request failed: error sending request for url (" + srv.URL + "/garbage)"},
		{"folded", req(srv.URL+"/fold", nil), "-32603 http/request failed: error sending request for url (" + srv.URL + "/fold)"},
		{"scheme", req(srv.URL+"/abs/file:___etc_passwd", nil), "-32603 http/request failed: redirect target uses unsupported URL scheme: file"},
		{"cut short", req(srv.URL+"/truncated", nil), "-32603 failed to read http/request response body: error decoding response body"},
	} {
		if got := errorOf(keep(c.call("http/request", tc.p))); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	c.notifs = nil
	keep(c.call("http/request", req(srv.URL+"/truncated", map[string]any{"streamResponse": true})))
	for _, n := range c.bodyDeltas(t, 10*time.Second) {
		keep(n)
	}
	c.close()
	time.Sleep(200 * time.Millisecond) // the log lines of the last requests
	for _, a := range answers {
		if strings.Contains(a, secret) || strings.Contains(a, "RM_SECRET") && !strings.Contains(a, "requires") {
			t.Errorf("an answer carries the secret: %s", a)
		}
	}
	if log := s.stderr.String(); strings.Contains(log, secret) {
		t.Errorf("the server's log carries the secret:\n%s", log)
	} else if !strings.Contains(log, "http request failed") {
		t.Errorf("the debug log has no line of the failed requests, so this test checks nothing:\n%s", log)
	}
}
