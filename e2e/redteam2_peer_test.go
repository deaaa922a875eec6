package e2e

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// inFlightUpgradeScript is a python3 program that sends a WebSocket upgrade
// request to url while no process holds the connected socket: the request
// is corked (TCP_CORK holds a partial segment for up to 200 ms), the socket
// fd is parked in flight inside a socketpair (SCM_RIGHTS) and the command's
// own copy is closed; the kernel flushes the request, the server scans
// /proc/*/fd for the peer's owners and finds none; the fd is then taken
// back and the answer read. It prints "STATUS <status line>".
func inFlightUpgradeScript(url string) string {
	hostPort := strings.TrimPrefix(url, "ws://")
	host, port, _ := strings.Cut(hostPort, ":")
	req := "GET / HTTP/1.1\r\nHost: " + hostPort + "\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n" +
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
	return fmt.Sprintf(`
import socket, time
s = socket.create_connection((%q, %s))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
s.sendall(%q.encode())
a, b = socket.socketpair()
socket.send_fds(a, [b"x"], [s.fileno()])
s.close()
time.sleep(1.5)
_, fds, _, _ = socket.recv_fds(b, 1, 1)
c = socket.socket(fileno=fds[0])
c.settimeout(10)
print("STATUS " + c.recv(4096).split(b"\r\n")[0].decode())
`, host, port, req)
}

// Red team 2: the peer check of a foreign sandbox (`codex sandbox
// --network`) looks for the owners of the peer socket in /proc/*/fd and
// refuses one that runs under a sandbox helper. A socket that no process
// holds at the moment of the check (parked in flight in a socketpair with
// SCM_RIGHTS while the corked request is flushed by the kernel) has no
// owners, and an empty owner list is allowed: the command is upgraded and
// can start an unsandboxed root process.
//
// Must hold: a local peer whose owners cannot be found is refused (also
// when the server has no sandbox of its own running), or the check is
// repeated until an owner is seen.
func TestRedteam2SandboxCLIPeerInFlight(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil || !strings.HasPrefix(py, "/usr/") {
		py = "/usr/bin/python3"
	}
	if err := exec.Command(py, "-c", "import socket; socket.send_fds").Run(); err != nil {
		t.Skipf("no python3 with socket.send_fds: %v", err)
	}
	s := startServer(t)
	out, _ := sandboxCLI(t, t.TempDir(), "--mode", "workspace-write", "--network", "--",
		py, "-c", inFlightUpgradeScript(s.URL))
	if !strings.Contains(out, "STATUS HTTP/1.1 403") {
		t.Fatalf("a command under `codex sandbox --network` reached the exec-server with its socket in flight: got %q, want a 403 status line", out)
	}
}
