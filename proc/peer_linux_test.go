//go:build linux

package proc

import (
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codexec/codex/internal/sockdiag"
	"go.uber.org/zap/zaptest"
	"golang.org/x/sys/unix"
)

// holder is a child that connects to ln and keeps the connection open
// until killed; accepted is the server side of its connection.
type holder struct {
	cmd      *exec.Cmd
	accepted net.Conn
}

// startHolder runs `bash -c script` (which must connect to $PORT and then
// wait) with attr and accepts its connection.
func startHolder(t *testing.T, ln net.Listener, script string, attr *syscall.SysProcAttr) *holder {
	t.Helper()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	cmd := exec.Command("/bin/bash", "--norc", "-c", script)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "PORT=" + port}
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start the holder: %v", err)
	}
	h := &holder{cmd: cmd}
	t.Cleanup(func() {
		_ = unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if h.accepted != nil {
			h.accepted.Close()
		}
	})
	_ = ln.(*net.TCPListener).SetDeadline(time.Now().Add(10 * time.Second))
	c, err := ln.Accept()
	if err != nil {
		t.Fatalf("the holder did not connect: %v", err)
	}
	h.accepted = c
	return h
}

const holdScript = `exec 3<>/dev/tcp/127.0.0.1/$PORT && read -r -t 30 <&3`

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

func check(tk *TreeKiller, h *holder) error {
	return tk.CheckPeer(h.accepted.LocalAddr(), h.accepted.RemoteAddr())
}

// The /proc fallback: the process holding the peer socket is a sandboxed
// process or its descendant (setsid does not matter), or lives in (a child
// of) a sandboxed process's PID namespace.
func TestCheckPeerProcFallback(t *testing.T) {
	tk := subreaperTreeKiller(t)
	ln := listen(t)

	plain := startHolder(t, ln, holdScript, &syscall.SysProcAttr{Setpgid: true})
	if err := check(tk, plain); err != nil {
		t.Fatalf("no sandbox yet: refused %v", err)
	}
	sbx := startHolder(t, ln, holdScript, &syscall.SysProcAttr{Setpgid: true})
	tk.trackSandboxed(sbx.cmd.Process.Pid)
	if err := check(tk, sbx); err == nil {
		t.Error("the sandboxed process's own connection was allowed")
	}
	if err := check(tk, plain); err != nil {
		t.Errorf("an unrelated process was refused: %v", err)
	}
	desc := startHolder(t, ln, `setsid bash --norc -c '`+holdScript+`' & wait`, &syscall.SysProcAttr{Setpgid: true})
	tk.trackSandboxed(desc.cmd.Process.Pid)
	if err := check(tk, desc); err == nil || !strings.Contains(err.Error(), "no unsandboxed process holds") {
		t.Errorf("a sandboxed process's descendant: %v", err)
	}

	// A nested PID namespace below a sandboxed one (unshare needs root).
	if os.Geteuid() == 0 {
		if _, err := exec.LookPath("unshare"); err == nil {
			ns := startHolder(t, ln, `unshare --pid --fork bash --norc -c '`+holdScript+`' & wait`,
				&syscall.SysProcAttr{Setpgid: true, Cloneflags: syscall.CLONE_NEWPID})
			nsIno, err := nsInode("/proc/" + strconv.Itoa(ns.cmd.Process.Pid) + "/ns/pid")
			if err != nil {
				t.Fatal(err)
			}
			tk.mu.Lock()
			tk.sb.roots[-1] = sbRoot{ns: nsIno} // known by its namespace alone
			tk.mu.Unlock()
			if err := check(tk, ns); err == nil {
				t.Error("a process in a PID namespace below a sandbox's was allowed")
			}
			tk.mu.Lock()
			delete(tk.sb.roots, -1)
			tk.mu.Unlock()
		}
	}

	// After the sandboxed processes are reaped and forgotten, an
	// unidentifiable local peer is refused in subreaper mode (escapees
	// cannot be accounted for), and so is a vanished one.
	tk.untrack(sbx.cmd.Process.Pid)
	tk.untrack(desc.cmd.Process.Pid)
	gone := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}
	if err := tk.CheckPeer(plain.accepted.LocalAddr(), gone); err == nil {
		t.Error("an unidentifiable local peer was allowed after sandboxed processes ran")
	}
	remote := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 40000}
	if err := tk.CheckPeer(plain.accepted.LocalAddr(), remote); err != nil {
		t.Errorf("a remote peer was refused: %v", err)
	}
}

// Cgroup mode: a sandboxed leaf, and a sub-cgroup made inside it, are
// refused; an unsandboxed leaf is allowed.
func TestCheckPeerCgroup(t *testing.T) {
	tk, err := newTreeKiller(zaptest.NewLogger(t), true, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tk.Close(); err != nil {
			t.Error(err)
		}
	})
	if tk.Mode() != modeCgroup {
		t.Skip("no writable cgroup v2 here")
	}
	ln := listen(t)
	intoLeaf := func(sandboxed bool) (*holder, string) {
		slot, err := tk.prepare(sandboxed)
		if err != nil {
			t.Fatal(err)
		}
		defer slot.closeFD()
		h := startHolder(t, ln, holdScript, &syscall.SysProcAttr{Setpgid: true, UseCgroupFD: true, CgroupFD: slot.fd})
		return h, slot.dir
	}
	plain, _ := intoLeaf(false)
	if err := check(tk, plain); err != nil {
		t.Errorf("unsandboxed leaf refused: %v", err)
	}
	sbx, leaf := intoLeaf(true)
	if err := check(tk, sbx); err == nil {
		t.Error("sandboxed leaf allowed")
	}
	// Without sock_diag, /proc/net and /proc/<pid>/cgroup give the same
	// answers.
	for _, tc := range []struct {
		h       *holder
		refused bool
	}{{plain, false}, {sbx, true}} {
		ap := func(a net.Addr) netip.AddrPort { return a.(*net.TCPAddr).AddrPort() }
		pn, err := sockdiag.LookupProcNet(ap(tc.h.accepted.RemoteAddr()), ap(tc.h.accepted.LocalAddr()))
		if err != nil {
			t.Fatal(err)
		}
		if err := tk.checkSocketOwners(pn); (err != nil) != tc.refused {
			t.Errorf("/proc fallback, sandboxed %v: %v", tc.refused, err)
		}
	}
	// A sub-cgroup inside the sandboxed leaf; a process started there.
	sub := filepath.Join(leaf, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rmdirRetry(sub, time.Second) })
	fd, err := unix.Open(sub, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	nested := startHolder(t, ln, holdScript, &syscall.SysProcAttr{Setpgid: true, UseCgroupFD: true, CgroupFD: fd})
	unix.Close(fd)
	if err := check(tk, nested); err == nil || !strings.Contains(err.Error(), leaf) {
		t.Errorf("sub-cgroup of a sandboxed leaf: %v", err)
	}
	// Our own client socket (the test process's cgroup) is allowed.
	c, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := tk.CheckPeer(s.LocalAddr(), s.RemoteAddr()); err != nil {
		t.Errorf("the server's own cgroup refused: %v", err)
	}
}

// A socket made in a sandboxed leaf keeps that cgroup id after the leaf
// is gone and whoever holds the socket then: the id stays refused.
func TestRemovedSandboxedLeafStaysRefused(t *testing.T) {
	tk := &TreeKiller{}
	tk.sb.leaves = map[string]uint64{"/cg/codex-exec-1/7": 4242, "/cg/codex-exec-1/8": 4343}
	tk.sb.ids = map[uint64]string{4242: "/cg/codex-exec-1/7", 4343: "/cg/codex-exec-1/8"}
	tk.mu.Lock()
	tk.forgetLeaf("/cg/codex-exec-1/7")
	tk.mu.Unlock()
	if _, ok := tk.sandboxedCgroup(4242); !ok {
		t.Error("the removed sandboxed leaf's id is no longer refused")
	}
	if _, ok := tk.sandboxedCgroup(4343); !ok {
		t.Error("a live sandboxed leaf is not refused")
	}
	if _, ok := tk.sandboxedCgroup(1); ok {
		t.Error("an unknown cgroup id is refused")
	}
	tk.mu.Lock()
	for i := range maxDeadLeaves {
		id := uint64(10000 + i)
		tk.sb.leaves["/x"] = id
		tk.forgetLeaf("/x")
	}
	tk.mu.Unlock()
	if len(tk.sb.dead) != maxDeadLeaves || len(tk.sb.deadOrder) != maxDeadLeaves {
		t.Errorf("dead leaves not bounded: %d/%d", len(tk.sb.dead), len(tk.sb.deadOrder))
	}
}

// With many sandboxed leaves alive, allowing an ordinary local client
// reads none of them: the check's cost does not grow with the sandboxes
// (the socket's cgroup is found by id, its holders among its own
// processes).
func TestCheckPeerReadsNoSandboxedLeaf(t *testing.T) {
	tk := cgroupTreeKiller(t)
	if os.Geteuid() != 0 {
		t.Skip("opening a cgroup by id needs root")
	}
	for range 40 {
		slot, err := tk.prepare(true)
		if err != nil {
			t.Fatal(err)
		}
		slot.closeFD()
		t.Cleanup(func() { tk.release(slot.dir, false) })
	}
	ln := listen(t)
	plain := startHolder(t, ln, holdScript, &syscall.SysProcAttr{Setpgid: true})
	before := leafSearches.Load()
	for range 3 {
		if err := check(tk, plain); err != nil {
			t.Fatalf("an unsandboxed client refused: %v", err)
		}
	}
	if n := leafSearches.Load() - before; n != 0 {
		t.Errorf("allowing a client searched the 40 sandboxed leaves %d times", n)
	}
}
