package e2e

import (
	"os"
	"strings"
	"testing"
)

// cgroupEscape runs argv[1:] (a shell script) in a child started with
// clone3(CLONE_INTO_CGROUP) on the root of the first cgroup2 mount it can
// see. Moving a process needs only write permission (DAC) on the
// cgroup.procs of the common ancestor, which uid 0 has as its owner; the
// read-only bind of cgroupfs and Landlock do not apply to clone3, and no
// capability is needed. It prints "ESCAPED <cgroup line>" from the child.
const cgroupEscape = `
import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
mnt = None
for line in open("/proc/self/mountinfo"):
    left, right = line.split(" - ", 1)
    if right.split()[0] == "cgroup2":
        mnt = left.split()[4]
        break
if mnt is None:
    print("NO-CGROUP2"); sys.exit(0)
fd = os.open(mnt, os.O_RDONLY | os.O_DIRECTORY)
args = struct.pack("11Q", 0x200000000, 0, 0, 0, 17, 0, 0, 0, 0, 0, fd)  # CLONE_INTO_CGROUP
buf = ctypes.create_string_buffer(args, len(args))
pid = libc.syscall(435, buf, ctypes.c_size_t(len(args)))  # clone3
if pid == 0:
    os.execv("/bin/bash", ["bash", "--norc", "-c",
        'echo "ESCAPED $(grep ^0:: /proc/self/cgroup)"; ' + sys.argv[1]])
elif pid < 0:
    print("clone3", os.strerror(ctypes.get_errno()))
else:
    os.waitpid(pid, 0)
`

// Red team (docs/sandbox.md §4.3 step 8): a sandboxed command leaves
// its cgroup leaf with clone3(CLONE_INTO_CGROUP), so everything tied to the
// leaf stops applying to the child:
//   - network on: the peer check no longer recognises it and the upgrade
//     to the server's own WebSocket succeeds (escape 8 again: an
//     unsandboxed root process is one process/start away);
//   - network off: the cgroup/sendmsg_unix program is attached to the leaf,
//     so a datagram socketpair posts to a host socket (escape 9 again);
//   - pids.max and memory.max of the leaf no longer bound it.
//
// Must hold: a sandboxed process stays in its leaf (for example: no
// cgroup2 mount in the sandbox's view, and seccomp answering clone3 with
// ENOSYS so libc falls back to clone, which cannot carry
// CLONE_INTO_CGROUP).
func TestRedteamCloneIntoCgroup(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no python3 for the clone3 probe")
	}
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()
	probe := func(t *testing.T, id, network, script string) string {
		t.Helper()
		root := t.TempDir()
		p := startParams(id, "/usr/bin/python3", "-c", cgroupEscape, script)
		p["cwd"] = "file://" + root
		p["sandbox"] = workspaceSandbox(root, network)
		out, _, _ := runSandboxed(t, c, p)
		if strings.Contains(out, "NO-CGROUP2") {
			t.Skip("no cgroup2 mount visible in the sandbox")
		}
		return out
	}

	t.Run("leaf", func(t *testing.T) {
		out := probe(t, "leaf", "restricted", "true")
		if strings.Contains(out, "ESCAPED") {
			t.Errorf("a sandboxed child left its cgroup leaf: %q", out)
		}
	})
	t.Run("peer", func(t *testing.T) {
		out := probe(t, "peer", "enabled", upgradeScript(s.URL, ""))
		if strings.Contains(out, "STATUS HTTP/1.1 101") {
			t.Errorf("a sandboxed child outside its leaf upgraded to the server: %q", out)
		}
	})
	t.Run("dgram", func(t *testing.T) {
		path, received := hostDgramSocket(t)
		send := `python3 -c 'import socket,sys; a,b=socket.socketpair(socket.AF_UNIX,socket.SOCK_DGRAM); a.sendmsg([b"escaped"],[],0,sys.argv[1])' ` + path
		out := probe(t, "dgram", "restricted", send)
		if got := received(); len(got) > 0 {
			t.Errorf("a network-off sandboxed child posted %q to a host socket: %q", got, out)
		}
	})
}
