package e2e

import (
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// shmProbe attaches the System V shared memory segment argv[1], prints
// what it holds and then marks it for removal.
const shmProbe = `
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
shmid = int(sys.argv[1])
addr = libc.shmat(shmid, None, 0)
if addr in (None, ctypes.c_void_p(-1).value):
    print("shmat failed", ctypes.get_errno())
else:
    print("READ", ctypes.string_at(addr, 16))
print("RMID", libc.shmctl(shmid, 0, None))
`

// Red team (docs/sandbox.md §7): sandboxed commands share
// the host's IPC namespace and run as uid 0 (without capabilities, but
// the owner of every root-owned IPC object). A sandboxed command, network
// off, reads a mode-0600 System V shared memory segment of a host root
// process and removes it; message queues and semaphores are just as open,
// and segments it creates outlive the run (and its memory limit).
//
// Must hold: no IPC object crosses the boundary: the helper unshares the
// IPC namespace (CLONE_NEWIPC) with the others.
func TestRedteamHostSysVIPC(t *testing.T) {
	id, err := unix.SysvShmGet(unix.IPC_PRIVATE, 4096, unix.IPC_CREAT|0o600)
	if err != nil {
		t.Skipf("no System V shared memory here: %v", err)
	}
	mem, err := unix.SysvShmAttach(id, 0, 0)
	if err != nil {
		unix.SysvShmCtl(id, unix.IPC_RMID, nil)
		t.Fatal(err)
	}
	copy(mem, "HOST-SHM-SECRET!")
	defer func() {
		unix.SysvShmDetach(mem)
		unix.SysvShmCtl(id, unix.IPC_RMID, nil)
	}()

	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()
	root := t.TempDir()
	p := startParams("ipc", "/usr/bin/python3", "-c", shmProbe, fmt.Sprint(id))
	p["cwd"] = "file://" + root
	p["sandbox"] = clientSandbox(root)
	out, _, _ := runSandboxed(t, c, p)
	var ds unix.SysvShmDesc
	_, statErr := unix.SysvShmCtl(id, unix.IPC_STAT, &ds)
	if strings.Contains(out, "HOST-SHM-SECRET") {
		t.Errorf("a sandboxed command read a host shared memory segment: %q", out)
	}
	if statErr == nil && ds.Perm.Mode&0o1000 != 0 { // SHM_DEST: marked for removal
		t.Errorf("a sandboxed command marked a host shared memory segment for removal: %q", out)
	}
}
