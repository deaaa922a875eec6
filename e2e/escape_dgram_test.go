package e2e

import (
	"net"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// dgramProbe tries to deliver a datagram to the pathname socket argv[1]
// from a network-off sandbox: with sendmsg on a fresh SOCK_DGRAM socket,
// with sendmsg and an explicit destination on one end of a DGRAM, a
// SEQPACKET and a STREAM socketpair. It prints "way result" lines.
const dgramProbe = `
import errno, socket, sys
path = sys.argv[1]
def attempt(name, f):
    try:
        f()
        print(name, "sent")
    except OSError as e:
        print(name, errno.errorcode.get(e.errno, e.errno))
def fresh():
    socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendmsg([b"fresh"], [], 0, path)
def pair(typ, msg):
    def f():
        a, b = socket.socketpair(socket.AF_UNIX, typ)
        a.sendmsg([msg], [], 0, path)
    return f
attempt("fresh", fresh)
attempt("dgrampair", pair(socket.SOCK_DGRAM, b"dgrampair"))
attempt("seqpacketpair", pair(socket.SOCK_SEQPACKET, b"seqpacketpair"))
attempt("streampair", pair(socket.SOCK_STREAM, b"streampair"))
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
import os
os.write(a.fileno(), b"ping")
print("pair works", b.recvfrom(16)[0] == b"ping")
`

// hostDgramSocket binds a datagram socket in a directory outside any
// sandbox root and returns its path and a function that returns every
// datagram queued on it so far, without waiting.
func hostDgramSocket(t *testing.T) (string, func() []string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "host.sock")
	l, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return path, func() []string {
		var got []string
		rc, err := l.SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		_ = rc.Read(func(fd uintptr) bool {
			buf := make([]byte, 64)
			for {
				n, _, err := unix.Recvfrom(int(fd), buf, unix.MSG_DONTWAIT)
				if err != nil {
					return true
				}
				got = append(got, string(buf[:n]))
			}
		})
		return got
	}
}

// checkDgramProbe checks the probe's report and the host socket after the
// probe exited (anything it sent is queued by then).
func checkDgramProbe(t *testing.T, out string, code int, received func() []string) {
	t.Helper()
	if code != 0 || !strings.Contains(out, "pair works True") {
		t.Fatalf("probe exit %d: %q", code, out)
	}
	if got := received(); len(got) > 0 {
		t.Errorf("datagrams reached the host socket: %q (probe: %q)", got, out)
	}
	for _, way := range []string{"fresh", "dgrampair"} {
		if !strings.Contains(out, way+" EPERM") {
			t.Errorf("%s: want EPERM: %q", way, out)
		}
	}
}

// docs/sandbox.md §4.4, §7: no datagram from a network-off sandbox reaches a host
// AF_UNIX socket outside its roots, while DGRAM socketpairs keep working.
func TestEscapeUnixDatagram(t *testing.T) {
	path, received := hostDgramSocket(t)
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()
	root := t.TempDir()
	p := startParams("dgram", "/usr/bin/python3", "-c", dgramProbe, path)
	p["cwd"] = "file://" + root
	p["sandbox"] = workspaceSandbox(root, "restricted")
	out, code, _ := runSandboxed(t, c, p)
	checkDgramProbe(t, out, code, received)
}

// The same through `codex sandbox`, which has no cgroup leaf from a
// server and makes its own.
func TestEscapeUnixDatagramSandboxCLI(t *testing.T) {
	path, received := hostDgramSocket(t)
	out, code := sandboxCLI(t, t.TempDir(), "--mode", "read-only", "--", "/usr/bin/python3", "-c", dgramProbe, path)
	checkDgramProbe(t, out, code, received)
}
