package netproxy

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCurl: a real client through each listener (skipped without curl):
// plain HTTP, HTTP inside a CONNECT tunnel, SOCKS5 with the name resolved
// by the proxy, and the refusals as curl reports them.
func TestCurl(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not on PATH")
	}
	b := newBed(t, Settings{Domains: map[string]Action{"api.example.com": Allow}})
	run := func(args ...string) (string, error) {
		out, err := exec.Command(curl, append([]string{"-sS", "--max-time", "10", "--noproxy", ""}, args...)...).CombinedOutput()
		return string(out), err
	}
	for _, args := range [][]string{
		{"-x", "http://" + b.httpAddr, "http://api.example.com/c"},
		{"-x", "http://" + b.httpAddr, "-p", "http://api.example.com/c"},
		{"-x", "socks5h://" + b.socksAddr, "http://api.example.com/c"},
	} {
		out, err := run(args...)
		if err != nil || !strings.HasPrefix(out, "upstream GET host=api.example.com uri=/c") {
			t.Errorf("curl %q: %v %q", args, err, out)
		}
	}
	if out, _ := run("-x", "http://"+b.httpAddr, "-w", "%{http_code}", "-o", "/dev/null", "http://other.org/"); out != "403" {
		t.Errorf("not allowed: %q", out)
	}
	if out, err := run("-x", "http://"+b.httpAddr, "-p", "http://other.org/"); err == nil || !strings.Contains(out, "403") {
		t.Errorf("CONNECT not allowed: %v %q", err, out)
	}
	if out, err := run("-x", "socks5h://"+b.socksAddr, "http://other.org/"); err == nil || !strings.Contains(out, "(2)") {
		t.Errorf("SOCKS5 not allowed: %v %q", err, out)
	}
}
