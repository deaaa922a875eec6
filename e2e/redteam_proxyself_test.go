package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// proxySelfScript is a Python program for a proxied sandboxed command: it
// asks its proxy for a tunnel to the server's own WebSocket port, upgrades,
// and drives the server as a client would, asking for an unsandboxed
// process that creates target. It prints the tunnel's and the upgrade's
// status lines, then ESCAPED when target appeared (it may read everywhere).
func proxySelfScript(serverPort int, target string) string {
	return fmt.Sprintf(`
import json, os, socket, struct, sys, time
port, target = %d, %q
pp = int(os.environ["HTTP_PROXY"].rsplit(":", 1)[1])
s = socket.create_connection(("127.0.0.1", pp), timeout=10)
def head():
    b = b""
    while b"\r\n\r\n" not in b:
        c = s.recv(1)
        if not c:
            break
        b += c
    return b.split(b"\r\n")[0].decode()
s.sendall(b"CONNECT 127.0.0.1:%%d HTTP/1.1\r\nHost: 127.0.0.1:%%d\r\n\r\n" %% (port, port))
print("TUNNEL", head(), flush=True)
s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1:%%d\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
          b"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n" %% port)
st = head()
print("UPGRADE", st, flush=True)
if " 101 " not in st:
    sys.exit(0)
def send(o):
    d = json.dumps(o).encode()
    h = bytes([0x81])
    if len(d) < 126:
        h += bytes([0x80 | len(d)])
    else:
        h += bytes([0x80 | 126]) + struct.pack(">H", len(d))
    s.sendall(h + b"\0\0\0\0" + d)
send({"id": 1, "method": "initialize", "params": {"clientName": "escapee"}})
send({"method": "initialized", "params": {}})
send({"id": 2, "method": "process/start", "params": {"processId": "out", "argv": ["/bin/sh", "-c", "echo pwned > " + target],
      "cwd": "file:///tmp", "env": {"PATH": "/usr/bin:/bin"}, "tty": False}})
for _ in range(200):
    if os.path.exists(target):
        print("ESCAPED", flush=True)
        break
    time.sleep(0.05)
`, serverPort, target)
}

// TestRedteamProxyToOwnServer: a command whose network goes through the
// managed proxy asks the proxy for the server's own WebSocket port. The
// proxy's upstream socket is the server's own, so the peer check (which
// refuses sockets made in a sandbox) sees an unsandboxed peer; the command
// then drives the server and gets an unsandboxed process. Reachable with
// every profile that lets the proxy dial a loopback address: "127.0.0.1"
// listed, a name resolving to loopback ("localhost") with allowLocalBinding,
// or any loopback host the client's review allows. The peer check must
// refuse the proxy's upstream connections as it refuses the command's own.
func TestRedteamProxyToOwnServer(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()
	port := s.URL[strings.LastIndex(s.URL, ":")+1:]
	var portN int
	fmt.Sscan(port, &portN)
	cases := []struct {
		name string
		np   map[string]any
	}{
		{"literal", map[string]any{"proxy": proxySettings(map[string]string{"127.0.0.1": "allow"})}},
		{"localBindingName", map[string]any{"proxy": proxySettings(map[string]string{"localhost": "allow"},
			func(p map[string]any) { p["allowLocalBinding"] = true })}},
	}
	dir := t.TempDir()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			target := filepath.Join(dir, tc.name)
			script := proxySelfScript(portN, target)
			if tc.name == "localBindingName" {
				script = strings.Replace(script, `b"CONNECT 127.0.0.1:`, `b"CONNECT localhost:`, 1)
			}
			p := proxiedStart("self-"+tc.name, "python3 -c '"+strings.ReplaceAll(script, "'", `'\''`)+"' 2>&1", readOnlyNetSandbox(), tc.np)
			var res map[string]string
			c.ok("process/start", p, &res)
			var b strings.Builder
			for _, e := range c.events("self-"+tc.name, 30*time.Second) {
				if e.Method == "process/output" {
					b.WriteString(decodeChunk(e.Params["chunk"].(string)))
				}
			}
			out := b.String()
			if _, err := os.Stat(target); err == nil || strings.Contains(out, "ESCAPED") {
				t.Errorf("the proxied command drove its own server and ran an unsandboxed process: %q", out)
			}
			if strings.Contains(out, "UPGRADE HTTP/1.1 101") {
				t.Errorf("the proxy carried the command to its own server's WebSocket port: %q", out)
			}
			if !strings.Contains(out, "TUNNEL HTTP/1.1 200") || !strings.Contains(out, "UPGRADE HTTP/1.1 403") {
				t.Errorf("want the tunnel up and the upgrade refused by the peer check (403): %q", out)
			}
		})
	}
}
