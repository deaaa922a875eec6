package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// inFlightUpgradeScript is a python3 program that sends a WebSocket upgrade
// request to url while no process holds the connected socket: the request
// is corked (TCP_CORK holds a partial segment for up to 200 ms), the socket
// fd is parked in flight inside a socketpair (SCM_RIGHTS) and the command's
// own copy is closed; the kernel flushes the request, the server scans
// /proc/*/fd for the peer's owners and finds none; the fd is then taken
// back and the answer read. It prints "STATUS <status line>".
//
// prelude, when set, is python code that leaves the connected socket in s
// (the script connects itself otherwise).
func inFlightUpgradeScript(url, prelude string) string {
	hostPort := strings.TrimPrefix(url, "ws://")
	host, port, _ := strings.Cut(hostPort, ":")
	req := "GET / HTTP/1.1\r\nHost: " + hostPort + "\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n" +
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
	if prelude == "" {
		prelude = fmt.Sprintf("s = socket.create_connection((%q, %s))", host, port)
	}
	return fmt.Sprintf(`
import os, socket, time
%s
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
`, prelude, req)
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
		py, "-c", inFlightUpgradeScript(s.URL, ""))
	if !strings.Contains(out, "STATUS HTTP/1.1 403") {
		t.Fatalf("a command under `codex sandbox --network` reached the exec-server with its socket in flight: got %q, want a 403 status line", out)
	}
}

// Red team 2, the same against the server's own sandboxes. The peer check
// recognises a sandboxed socket by the cgroup its creator ran in, but only
// while that leaf exists. Run A (network on) connects to the server and
// hands the socket to run B over a Unix socket in the workspace, then
// exits: its leaf is removed, the socket still names it. Run B sends the
// upgrade with the socket parked in flight (as above): the cgroup id is
// unknown, no process holds the socket, and the owner list is empty, so
// the upgrade is allowed.
//
// Must hold: a socket whose cgroup is not the server's own (a removed
// leaf included), or whose owners cannot be found, is refused while the
// server's sandboxes may be alive; better, remember removed leaves' ids
// for as long as sockets may name them (or refuse every local peer that
// is not in a cgroup the server knows as unsandboxed).
func TestRedteam2DeadLeafSocketInFlight(t *testing.T) {
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import socket; socket.send_fds").Run(); err != nil {
		t.Skipf("no python3 with socket.send_fds: %v", err)
	}
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()
	root := t.TempDir()
	sb := workspaceSandbox(root, "enabled")
	hostPort := strings.TrimPrefix(s.URL, "ws://")
	host, port, _ := strings.Cut(hostPort, ":")
	a := fmt.Sprintf(`
import socket, time
s = socket.create_connection((%q, %s))
for _ in range(200):
    try:
        u = socket.socket(socket.AF_UNIX); u.connect("p.sock"); break
    except OSError:
        time.sleep(0.05)
socket.send_fds(u, [b"x"], [s.fileno()])
print("A-SENT")
`, host, port)
	b := inFlightUpgradeScript(s.URL, `
l = socket.socket(socket.AF_UNIX); l.bind("p.sock"); l.listen(1)
u, _ = l.accept()
_, got, _, _ = socket.recv_fds(u, 1, 1)
while not os.path.exists("go"):
    time.sleep(0.05)
time.sleep(0.5)
s = socket.socket(fileno=got[0])`)
	for name, src := range map[string]string{"a.py": a, "b.py": b} {
		if err := writeFile(root, name, src); err != nil {
			t.Fatal(err)
		}
	}
	var res map[string]string
	c.ok("process/start", sandboxedStart("holder", root, sb, false, "exec "+py+" b.py"), &res)
	out, _, _ := runSandboxed(t, c, sandboxedStart("creator", root, sb, false, "exec "+py+" a.py"))
	if !strings.Contains(out, "A-SENT") {
		t.Fatalf("run A did not hand over its socket: %q", out)
	}
	if err := writeFile(root, "go", ""); err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	for _, e := range c.events("holder", 20*time.Second) {
		if e.Method == "process/output" {
			got.WriteString(decodeChunk(e.Params["chunk"].(string)))
		}
	}
	if !strings.Contains(got.String(), "STATUS HTTP/1.1 403") {
		t.Fatalf("a sandboxed command reached its own exec-server with another run's socket: got %q, want a 403 status line", got.String())
	}
}

func writeFile(dir, name, data string) error {
	return os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644)
}
