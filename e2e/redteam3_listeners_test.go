package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// fetchScript is a bash script that sends `GET path` to host:port over
// /dev/tcp and prints the whole answer between BEGIN and END markers
// (or "connect-failed").
func fetchScript(hostPort, path string) string {
	host, port, _ := strings.Cut(hostPort, ":")
	return fmt.Sprintf(`exec 3<>/dev/tcp/%s/%s || { echo "%s connect-failed"; exit 0; }
printf 'GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n' >&3
echo "BEGIN %s"
timeout 10 cat <&3
echo "END %s"`, host, port, path, path, hostPort, path, path)
}

// Red team 3 (issue 17, item 6): the WebSocket listener refuses a
// sandboxed command's upgrade (403), but --metrics-listen and the hidden
// --debug-pprof listener serve anyone: a network-on sandboxed command reads
// the server's metrics, and /debug/pprof/cmdline shows the server's argv
// (goroutine dumps and heap profiles are one path further).
//
// Must hold: no listener of the server answers a sandboxed peer (the peer
// check of the WebSocket listener applies to them too, and the refusal is
// logged), while an unsandboxed local client still reads both.
func TestRedteam3SandboxedReadsMetricsAndPprof(t *testing.T) {
	s := startServer(t, "--log-format", "json", "--metrics-listen", "127.0.0.1:0", "--debug-pprof", "127.0.0.1:0")
	metrics := metricsURL(t, s)
	s.waitStderr(`"serving pprof (debugging only)"`, 5*time.Second)
	pp, _ := one(t, jsonLogs(t, s.stderr.String()), "serving pprof (debugging only)", nil)["addr"].(string)
	if !strings.HasPrefix(pp, "127.0.0.1:") {
		t.Fatalf("pprof addr %q", pp)
	}
	cmdline := "http://" + pp + "/debug/pprof/cmdline"

	// The test itself (an unsandboxed local client) reads both.
	if code, body := get(t, metrics, nil); code != http.StatusOK || !strings.Contains(body, "codex_exec_server_processes_live") {
		t.Fatalf("GET %s from the test: %d %.200q", metrics, code, body)
	}
	if code, body := get(t, cmdline, nil); code != http.StatusOK || !strings.Contains(body, "--metrics-listen") {
		t.Fatalf("GET %s from the test: %d %.200q", cmdline, code, body)
	}

	c := dial(t, s.URL, nil)
	c.handshake()
	root := t.TempDir()
	sb := workspaceSandbox(root, "enabled")
	mHostPort := strings.TrimSuffix(strings.TrimPrefix(metrics, "http://"), "/metrics")
	script := fetchScript(mHostPort, "/metrics") + "\n" + fetchScript(pp, "/debug/pprof/cmdline") +
		"\n" + fetchScript(pp, "/debug/pprof/goroutine?debug=1")
	out, _, _ := runSandboxed(t, c, sandboxedStart("fetch", root, sb, false, script))
	for _, leak := range []string{"200 OK", "codex_exec_server_", "--metrics-listen", "goroutine profile"} {
		if strings.Contains(out, leak) {
			t.Errorf("a sandboxed command read a listener of the server (%q in its output):\n%.1500s", leak, out)
		}
	}
	for _, path := range []string{"/metrics", "/debug/pprof/cmdline", "/debug/pprof/goroutine?debug=1"} {
		if !strings.Contains(out, "BEGIN "+path) || !strings.Contains(out, "END "+path) {
			t.Errorf("the sandboxed fetch of %s did not run to its end: %q", path, out)
		}
	}
	for _, l := range []string{`"refused metrics peer"`, `"refused pprof peer"`} {
		if !s.waitStderr(l, 5*time.Second) {
			t.Errorf("no %s log line", l)
		}
	}
}
