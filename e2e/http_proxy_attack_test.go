package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/codexec/codex/sandbox"
)

// proxyAttack is what a command runs to make the server send an HTTP
// request for it: over stdio, it writes a request into the server's stdin
// through /proc/<server>/fd/0 (a pipe, which /proc reopens); over
// WebSocket, it connects to the listener. $1 is the server's PID, $2 the
// request line, $3 the listener's port (empty for stdio).
const proxyAttack = `pid=$1 line=$2 port=$3
if [ -z "$port" ]; then
  if printf '%s\n' "$line" 2>/dev/null >/proc/$pid/fd/0; then echo injected; else echo refused; fi
else
  if exec 3<>/dev/tcp/127.0.0.1/$port; then
    printf 'GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n' >&3
    read -r status <&3; echo "upgrade: $status"
  else echo unreachable; fi
fi`

// rootWriteSandbox is a profile whose root is writable (so no Landlock
// file rules) with the network off.
func rootWriteSandbox(root string) map[string]any {
	sb := workspaceSandbox(root, "restricted")
	sb["permissions"].(map[string]any)["file_system"] = map[string]any{"type": "restricted", "entries": []any{
		map[string]any{"path": map[string]any{"type": "special", "value": map[string]any{"kind": "root"}}, "access": "write"}}}
	return sb
}

// TestHTTPRequestNoOpenProxyForSandboxes is the open-proxy attack
// (docs/protocol.md §6.16, docs/sandbox.md §7): a command with the network
// off must not get an HTTP request out through the server, which makes
// http/request with its own network. It tries over stdio, by writing an
// http/request into the server's stdin through /proc, and over WebSocket,
// by reaching the listener. The same command without a sandbox succeeds
// (the HTTP server gets the request; the listener answers the upgrade),
// which shows the attack works when nothing stops it. Sandboxed with the
// network off — read-only, workspace-write, a writable root — in both PID
// namespace modes (inherit where Landlock can scope it), under a server run
// as root and as nobody, it must neither reach the HTTP server nor the
// listener. With the network on it reaches
// the network itself, but still not the server: the stdin of a stdio
// server is out of its reach, the listener answers 403.
func TestHTTPRequestNoOpenProxyForSandboxes(t *testing.T) {
	t.Parallel()
	modes := []string{"isolate"}
	if sandbox.SignalScopeAvailable() == nil {
		modes = append(modes, "inherit")
	}
	profiles := []struct {
		name string
		sb   func(root string) map[string]any
	}{
		{"none", nil},
		{"workspace-write", func(root string) map[string]any { return workspaceSandbox(root, "restricted") }},
		{"root-write", rootWriteSandbox},
		{"workspace-write-network", func(root string) map[string]any { return workspaceSandbox(root, "enabled") }},
	}
	users := []string{"root"}
	if fi, err := os.Stat(os.TempDir()); os.Geteuid() == 0 && err == nil && fi.Mode().Perm()&0o001 != 0 {
		// A server without capabilities: its commands' lack of them no
		// longer keeps them from its /proc entries; the PID namespace and
		// Landlock must.
		users = append(users, "nobody")
	}
	for _, user := range users {
		for _, mode := range modes {
			t.Run(user+"/"+mode, func(t *testing.T) {
				srv := newHTTPTestServer(t)
				for _, transport := range []string{"stdio", "ws"} {
					t.Run(transport, func(t *testing.T) {
						attackRoutes(t, srv, user, mode, transport, profiles)
					})
				}
			})
		}
	}
}

// attackRoutes runs the attack of TestHTTPRequestNoOpenProxyForSandboxes
// for each profile on one server.
func attackRoutes(t *testing.T, srv *httpTestServer, user, mode, transport string, profiles []struct {
	name string
	sb   func(root string) map[string]any
}) {
	var c *cx
	pid, port := 0, ""
	newRoot := t.TempDir
	args := []string{"--linux-sandbox-pid-namespace", mode}
	if user == "nobody" {
		newRoot = func() string { return nobodyDir(t) }
	}
	if transport == "stdio" {
		bin, setup := binary, func(*exec.Cmd) {}
		if user == "nobody" {
			bin, setup = nobodyBinary(t), asNobody(nobodyDir(t))
		}
		cmd := exec.Command(bin, append([]string{"exec-server", "--listen", "stdio"}, args...)...)
		cmd.Env = []string{raceEnv, "PATH=/usr/bin:/bin"}
		setup(cmd)
		// The pipes belong to the server's user, as when its client runs
		// as that user: otherwise a nobody server's own child could not
		// reopen them either.
		inR, in, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		out, outW, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		if user == "nobody" {
			for _, f := range []*os.File{inR, outW} {
				if err := f.Chown(nobodyID, nobodyID); err != nil {
					t.Fatal(err)
				}
			}
		}
		cmd.Stdin, cmd.Stdout = inR, outW
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		inR.Close()
		outW.Close()
		t.Cleanup(func() { in.Close(); _ = cmd.Wait(); out.Close() })
		pid = cmd.Process.Pid
		c = &cx{t: t, write: func(l string) { io.WriteString(in, l+"\n") }, in: make(chan map[string]any, 1024), nextID: 1}
		go func() {
			defer close(c.in)
			sc := bufio.NewScanner(out)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				var m map[string]any
				if json.Unmarshal(sc.Bytes(), &m) == nil {
					c.in <- m
				}
			}
		}()
	} else {
		var s *server
		if user == "nobody" {
			s = startServerWith(t, nobodyBinary(t), asNobody(nobodyDir(t)), args...)
		} else {
			s = startServer(t, args...)
		}
		pid = s.cmd.Process.Pid
		port = s.URL[strings.LastIndex(s.URL, ":")+1:]
		c = cxDial(t, s.URL)
	}
	result(t, c.call("initialize", map[string]any{"clientName": "e2e"}))
	c.write(`{"method":"initialized"}`)
	for _, pr := range profiles {
		marker := fmt.Sprintf("attack-%s-%s-%s-%s", user, mode, transport, pr.name)
		line := fmt.Sprintf(`{"id":"%s","method":"http/request","params":{"method":"GET","url":"%s/echo?%s","requestId":"x"}}`, marker, srv.URL, marker)
		root := newRoot()
		p := startParams(marker, "/bin/bash", "--norc", "-c", proxyAttack, "attack", fmt.Sprint(pid), line, port)
		p["cwd"] = "file://" + root
		if pr.sb != nil {
			p["sandbox"] = pr.sb(root)
		}
		out, injected, started := runAttack(t, c, p, marker, transport == "stdio")
		if !started {
			t.Skipf("the server cannot sandbox as %s here: %s", user, out)
		}
		reached := false
		for _, r := range srv.requests() {
			reached = reached || strings.Contains(r, marker)
		}
		t.Logf("%s: %q, HTTP server reached: %v", pr.name, out, reached)
		if pr.sb == nil {
			// The control: nothing stops an unsandboxed command.
			if transport == "stdio" && (!reached || !injected) {
				t.Errorf("unsandboxed, the injection did not work (%q): this test would prove nothing", out)
			}
			if transport == "ws" && !strings.Contains(out, "upgrade: HTTP/1.1 101") {
				t.Errorf("unsandboxed, the listener did not answer the upgrade (%q): this test would prove nothing", out)
			}
			continue
		}
		if reached || injected {
			t.Errorf("%s: a sandboxed command got an HTTP request out through the server (%q)", pr.name, out)
		}
		if pr.name == "workspace-write-network" {
			// It has a network of its own, but the listener refuses a
			// peer in a sandbox (the peer check).
			if transport == "ws" && !strings.Contains(out, "upgrade: HTTP/1.1 403") {
				t.Errorf("%s: the listener did not refuse a sandboxed peer: %q", pr.name, out)
			}
			continue
		}
		if transport == "ws" && !strings.Contains(out, "unreachable") {
			t.Errorf("%s: a sandboxed command without network reached the listener: %q", pr.name, out)
		}
	}
}

// runAttack runs the attack process and returns its output and whether
// an answer to the injected request (id marker) came back to the client.
// Only over stdio (injects) can the attack put a request on the client's
// connection: the WebSocket route sends an upgrade and reads its status.
func runAttack(t *testing.T, c *cx, p map[string]any, marker string, injects bool) (string, bool, bool) {
	t.Helper()
	id := c.send("process/start", p)
	var out strings.Builder
	injected := false
	deadline := time.After(30 * time.Second)
	for {
		select {
		case m, ok := <-c.in:
			if !ok {
				t.Fatal("connection closed")
			}
			if m["id"] == marker {
				injected = true
				continue
			}
			if m["id"] == float64(id) {
				if m["error"] != nil {
					b, _ := json.Marshal(m["error"])
					return string(b), false, false
				}
				continue
			}
			params, _ := m["params"].(map[string]any)
			if params == nil || params["processId"] != marker {
				continue
			}
			switch m["method"] {
			case "process/output":
				out.WriteString(decodeChunk(params["chunk"].(string)))
			case "process/closed":
				if injected || !injects || strings.TrimSpace(out.String()) == "refused" {
					// Answered already, or nothing was written into the
					// server's stdin (the write refused, or no stdin to
					// write to): no answer can follow.
					return out.String(), injected, true
				}
				// The line went in (or the output is unexpected): the
				// injected request's answer may follow the close.
				wait := time.After(10 * time.Second)
				for !injected {
					select {
					case m, ok := <-c.in:
						if !ok {
							t.Fatal("connection closed")
						}
						injected = m["id"] == marker
					case <-wait:
						return out.String(), false, true
					}
				}
				return out.String(), true, true
			}
		case <-deadline:
			t.Fatalf("%s did not close; output %q", marker, out.String())
		}
	}
}
