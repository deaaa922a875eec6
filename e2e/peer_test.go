package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// upgradeScript is a bash script that opens a TCP connection to the
// server's own URL and sends a raw WebSocket upgrade carrying the bearer
// token, then prints the status line it gets back ("STATUS <line>").
func upgradeScript(url, token string) string {
	hostPort := strings.TrimPrefix(url, "ws://")
	host, port, _ := strings.Cut(hostPort, ":")
	req := "GET / HTTP/1.1\\r\\nHost: " + hostPort + "\\r\\nConnection: Upgrade\\r\\nUpgrade: websocket\\r\\n" +
		"Sec-WebSocket-Version: 13\\r\\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\\r\\n" +
		"Authorization: Bearer " + token + "\\r\\n\\r\\n"
	return fmt.Sprintf(`exec 3<>/dev/tcp/%s/%s || { echo "STATUS connect-failed"; exit 0; }
printf '%s' >&3
IFS= read -r -t 10 line <&3
echo "STATUS ${line%%$'\r'}"`, host, port, req)
}

// The peer check (docs/sandbox.md §7): a sandboxed command with the network on connects to
// the server that started it and would get an unsandboxed process through
// it; with --ws-token-file it reads the token too. Both must fail, while an
// unsandboxed child of the server and the test client still connect.
func TestSandboxedPeerRefused(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	const token = "s3cret-capability-token"
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, "--ws-auth", "capability-token", "--ws-token-file", tokenFile)
	c := dial(t, s.URL, map[string]string{"Authorization": "Bearer " + token})
	c.handshake()
	root := filepath.Join(dir, "proj")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	sb := workspaceSandbox(root, "enabled")

	// The token file is masked in the sandbox.
	out, _, _ := runSandboxed(t, c, sandboxedStart("read-token", root, sb, false,
		"cat "+tokenFile+" && echo READ-OK || echo READ-FAILED"))
	if strings.Contains(out, token) || !strings.Contains(out, "READ-FAILED") {
		t.Errorf("a sandboxed command read the token file: %q", out)
	}

	// Even with the token, the upgrade from inside a sandbox is refused,
	// from the command itself and from a background descendant.
	script := upgradeScript(s.URL, token)
	out, _, _ = runSandboxed(t, c, sandboxedStart("connect", root, sb, false, script))
	if !strings.Contains(out, "STATUS HTTP/1.1 403") {
		t.Errorf("sandboxed upgrade: got %q, want a 403 status line", out)
	}
	out, _, _ = runSandboxed(t, c, sandboxedStart("connect-bg", root, sb, false,
		"( setsid bash --norc -c '"+strings.ReplaceAll(script, "'", `'\''`)+"' ) & wait"))
	if !strings.Contains(out, "STATUS HTTP/1.1 403") {
		t.Errorf("sandboxed descendant's upgrade: got %q, want a 403 status line", out)
	}
	if log := s.stderr.String(); !strings.Contains(log, "refused websocket peer") {
		t.Errorf("no log line for the refusal; stderr:\n%s", log)
	}

	// An unsandboxed child of the server still connects.
	p := startParams("plain", "/bin/bash", "--norc", "-c", script)
	out, _ = c.run("plain", p)
	if !strings.Contains(out, "STATUS HTTP/1.1 101") {
		t.Errorf("unsandboxed child's upgrade: got %q, want 101", out)
	}
	// And so does an unsandboxed local client, while a sandboxed process
	// is alive.
	var res map[string]string
	c.ok("process/start", sandboxedStart("sleeper", root, sb, false, "sleep 30"), &res)
	c2 := dial(t, s.URL, map[string]string{"Authorization": "Bearer " + token})
	c2.handshake()
	c2.close()
	c.ok("process/terminate", map[string]any{"processId": "sleeper"}, nil)
	c.events("sleeper", 10*time.Second)
}
