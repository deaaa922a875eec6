//go:build linux

package proc

import (
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/codexec/codex/internal/sockdiag"
	"go.uber.org/zap/zaptest"
	"golang.org/x/sys/unix"
)

// fdTablesRead records the pids whose fd tables the peer search reads
// until the test ends.
func fdTablesRead(t *testing.T) func(pid int) bool { return recordPids(t, &fdTableRead) }

// cgroupTreeKiller returns a TreeKiller in cgroup mode, closed when the
// test ends; it skips the test where cgroup v2 is not writable.
func cgroupTreeKiller(t *testing.T) *TreeKiller {
	t.Helper()
	tk, err := newTreeKiller(zaptest.NewLogger(t), true, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tk.Close() })
	if tk.Mode() != modeCgroup {
		t.Skip("no writable cgroup v2 here")
	}
	return tk
}

// subreaperTreeKiller returns a TreeKiller in subreaper mode, closed when
// the test ends.
func subreaperTreeKiller(t *testing.T) *TreeKiller {
	t.Helper()
	tk, err := newTreeKiller(zaptest.NewLogger(t), false, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tk.Close() })
	return tk
}

// recordPids makes hook record every pid it is told of until the test
// ends, and returns whether a pid was.
func recordPids(t *testing.T, hook *atomic.Pointer[func(pid int)]) func(pid int) bool {
	var mu sync.Mutex
	seen := map[int]bool{}
	f := func(pid int) { mu.Lock(); seen[pid] = true; mu.Unlock() }
	hook.Store(&f)
	t.Cleanup(func() { hook.Store(nil) })
	return func(pid int) bool { mu.Lock(); defer mu.Unlock(); return seen[pid] }
}

// peerSocket returns what sock_diag says of h's socket.
func peerSocket(t *testing.T, h *holder) sockdiag.Socket {
	t.Helper()
	ap := func(a net.Addr) netip.AddrPort { return a.(*net.TCPAddr).AddrPort() }
	s, err := sockdiag.LookupTCP(ap(h.accepted.RemoteAddr()), ap(h.accepted.LocalAddr()))
	if err != nil {
		t.Skipf("no sock_diag: %v", err)
	}
	return s
}

// The search for the holder of a peer socket judges processes before it
// reads their fd tables: a sandboxed process's table (what it holds is
// the sandboxed command's choice) is never read, in subreaper mode (a
// tracked sandboxed process and its descendant) and in cgroup mode (a
// process in a sandboxed leaf, even when the socket's cgroup id is not
// consulted); an unsandboxed holder is found and allowed.
func TestPeerScanSkipsSandboxedFDTables(t *testing.T) {
	t.Run("subreaper", func(t *testing.T) {
		wasRead := fdTablesRead(t)
		tk := subreaperTreeKiller(t)
		ln := listen(t)
		plain := startHolder(t, ln, holdScript, &syscall.SysProcAttr{Setpgid: true})
		sbx := startHolder(t, ln, `setsid bash --norc -c '`+holdScript+`' & wait`, &syscall.SysProcAttr{Setpgid: true})
		tk.trackSandboxed(sbx.cmd.Process.Pid)
		if err := tk.checkSocketOwners(peerSocket(t, sbx)); err == nil {
			t.Error("a sandboxed process's descendant was allowed")
		}
		if wasRead(sbx.cmd.Process.Pid) {
			t.Error("the sandboxed process's fd table was read")
		}
		for _, pid := range childPids(sbx.cmd.Process.Pid) {
			if wasRead(pid) {
				t.Errorf("the fd table of pid %d, a sandboxed process's child, was read", pid)
			}
		}
		if err := tk.checkSocketOwners(peerSocket(t, plain)); err != nil {
			t.Errorf("an unsandboxed holder was refused: %v", err)
		}
		if !wasRead(plain.cmd.Process.Pid) {
			t.Error("the unsandboxed holder's fd table was not read")
		}
	})
	t.Run("cgroup", func(t *testing.T) {
		wasRead := fdTablesRead(t) // this subtest's reads only: a pid may be reused
		tk := cgroupTreeKiller(t)
		ln := listen(t)
		slot, err := tk.prepare(true)
		if err != nil {
			t.Fatal(err)
		}
		sbx := startHolder(t, ln, holdScript, &syscall.SysProcAttr{Setpgid: true, UseCgroupFD: true, CgroupFD: slot.fd})
		slot.closeFD()
		sock := peerSocket(t, sbx)
		sock.HasCgroupID = false // as a kernel that does not report it
		if err := tk.checkSocketOwners(sock); err == nil {
			t.Error("a process in a sandboxed leaf was allowed")
		}
		if wasRead(sbx.cmd.Process.Pid) {
			t.Error("the fd table of a process in a sandboxed leaf was read")
		}
	})
}

// A client that connects again is judged by its own stat file, not by
// its whole ancestry: a clean walk to the top is remembered by pid and
// start time. A process on a remembered pid with another start time (a
// pid reused by a sandboxed command) is walked afresh and refused.
func TestPeerLineageRemembered(t *testing.T) {
	tk := subreaperTreeKiller(t)
	ln := listen(t)
	plain := startHolder(t, ln, holdScript, &syscall.SysProcAttr{Setpgid: true})
	sbx := startHolder(t, ln, holdScript+` & wait`, &syscall.SysProcAttr{Setpgid: true})
	tk.trackSandboxed(sbx.cmd.Process.Pid)

	walked := recordPids(t, &lineageRead)
	if err := check(tk, plain); err != nil {
		t.Fatalf("an unsandboxed client refused: %v", err)
	}
	if !walked(os.Getpid()) {
		t.Fatal("the first check did not walk the client's ancestry")
	}
	walked = recordPids(t, &lineageRead)
	if err := check(tk, plain); err != nil {
		t.Fatalf("an unsandboxed client refused the second time: %v", err)
	}
	if walked(os.Getpid()) {
		t.Error("the second check walked the client's ancestry again")
	}
	if !walked(plain.cmd.Process.Pid) {
		t.Error("the second check did not read the client's own stat")
	}

	// The sandboxed process's child holds the socket. Its pid is
	// remembered clean with another start time: as if its pid had
	// belonged to a clean process before.
	kids := childPids(sbx.cmd.Process.Pid)
	if len(kids) != 1 {
		t.Fatalf("the sandboxed holder has children %v, want one", kids)
	}
	t.Cleanup(func() { // before the holder's group is killed: its shell reaps it
		_ = unix.Kill(kids[0], unix.SIGKILL)
		for i := 0; i < 500 && unix.Kill(kids[0], 0) == nil; i++ {
			time.Sleep(10 * time.Millisecond)
		}
	})
	st, err := readStat(kids[0])
	if err != nil {
		t.Fatal(err)
	}
	st.start++
	tk.clean.add([]procStat{st})
	if err := check(tk, sbx); err == nil {
		t.Error("a sandboxed process on a pid remembered clean was allowed")
	}
}

// A client remembered clean that then execs a launcher (exec keeps its pid
// and start time) confines what it forks next: the child's connection is
// refused, as a TreeKiller that never saw the client refuses it.
func TestPeerLineageSeesExecIntoLauncher(t *testing.T) {
	tk := subreaperTreeKiller(t)
	tk.launchers = []string{"codex-linux-sandbox"}
	ln := listen(t)
	// X holds a connection, and once told, execs the launcher, which
	// forks a child that connects.
	script := `exec 3<>/dev/tcp/127.0.0.1/$PORT && read -r -t 30 <&3 && exec 3<&- && ` +
		`exec -a codex-linux-sandbox /bin/bash --norc -c '/bin/bash --norc -c "exec 4<>/dev/tcp/127.0.0.1/\$PORT && read -r -t 30 <&4" & wait'`
	x := startHolder(t, ln, script, &syscall.SysProcAttr{Setpgid: true})
	killDescendantsFirst(t, x.cmd.Process.Pid)
	if err := check(tk, x); err != nil {
		t.Fatalf("the client before its exec refused: %v", err)
	}
	st, err := readStat(x.cmd.Process.Pid)
	if err != nil || !tk.clean.has(st.pid, st.start) {
		t.Fatalf("the client was not remembered clean (%v)", err)
	}
	if _, err := x.accepted.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	_ = ln.(*net.TCPListener).SetDeadline(time.Now().Add(10 * time.Second))
	child, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer child.Close()
	if err := tk.CheckPeer(child.LocalAddr(), child.RemoteAddr()); err == nil {
		t.Error("the child of a launcher remembered clean before its exec was allowed")
	}
	fresh := subreaperTreeKiller(t)
	fresh.launchers = tk.launchers
	if err := fresh.CheckPeer(child.LocalAddr(), child.RemoteAddr()); err == nil {
		t.Error("a TreeKiller that never saw the client allowed the launcher's child")
	}
}

// killDescendantsFirst kills pid's descendants, deepest first, when the
// test ends, before pid's group is: each is reaped by its own shell, and
// none is left to the test process (a child subreaper in these tests).
func killDescendantsFirst(t *testing.T, pid int) {
	t.Cleanup(func() {
		var all []int
		var walk func(p int)
		walk = func(p int) {
			for _, k := range childPids(p) {
				walk(k)
				all = append(all, k)
			}
		}
		walk(pid)
		for _, k := range all {
			_ = unix.Kill(k, unix.SIGKILL)
			for i := 0; i < 500 && unix.Kill(k, 0) == nil; i++ {
				time.Sleep(10 * time.Millisecond)
			}
		}
	})
}

// The attack on a walk that stops short: a sandboxed command's child Y
// (in a session of its own) forks X, which connects; Y exits while the
// search walks X's ancestry, after X's stat named Y and before Y's was
// read. X re-parents to the server, which adopts it, and is refused; a
// walk that took the vanished Y for the top of a clean ancestry allowed it.
func TestPeerLineageAncestorVanishes(t *testing.T) {
	tk := subreaperTreeKiller(t)
	s, y, _ := sandboxedGrandchild(t, tk, true)

	var once sync.Once
	vanished := false
	f := func(pid int) {
		if pid != y {
			return
		}
		once.Do(func() {
			_ = unix.Kill(y, unix.SIGKILL)
			for i := 0; i < 500; i++ { // until S reaped it
				if _, err := os.Stat("/proc/" + strconv.Itoa(y)); err != nil {
					vanished = true
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
	lineageRead.Store(&f)
	t.Cleanup(func() { lineageRead.Store(nil) })
	err := check(tk, s)
	if !vanished {
		t.Fatal("the walk never read Y, or Y did not vanish")
	}
	if err == nil {
		t.Error("a sandboxed command's grandchild whose parent vanished during the walk was allowed")
	}
}

// The attack on a walk that takes a newcomer for a parent: a sandboxed
// command's child Y forks X, which connects; Y exits while the search
// walks X's ancestry, after X's stat named Y and before Y's was read, and
// its pid goes to a process that is not sandboxed (the next fork on the
// host once the pid space wrapped: a sandboxed command can fork its way
// around 32,768 pids in seconds). The stat then read is the newcomer's,
// born after X: it is no parent of X's, and the walk starts again; one
// that went up the newcomer's clean ancestry allowed X. The read of Y is
// answered with a clean process's stat under Y's pid (lineageSwap): a
// real reuse needs the host's ns_last_pid, which every other test running
// beside this one would feel.
func TestPeerLineageAncestorPidReused(t *testing.T) {
	tk := subreaperTreeKiller(t)
	s, y, xPid := sandboxedGrandchild(t, tk, false)
	x, err := readStat(xPid)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // the newcomer is born ticks after X
	newcomer := exec.Command("/bin/sleep", "30")
	if err := newcomer.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = newcomer.Process.Kill(); _ = newcomer.Wait() })
	st, err := readStat(newcomer.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if st.start <= x.start {
		t.Skipf("the newcomer was not born in a later clock tick than X (%d, %d)", st.start, x.start)
	}
	st.pid = y
	var once sync.Once
	walkingX, swapped := false, false
	read := func(pid int) {
		if pid == x.pid {
			walkingX = true
		}
	}
	lineageRead.Store(&read)
	t.Cleanup(func() { lineageRead.Store(nil) })
	swap := func(pid int) (procStat, error, bool) {
		if pid != y || !walkingX {
			return procStat{}, nil, false // Y judged on its own, before X: not the race
		}
		ok := false
		once.Do(func() { ok, swapped = true, true })
		return st, nil, ok
	}
	lineageSwap.Store(&swap)
	t.Cleanup(func() { lineageSwap.Store(nil) })
	err = check(tk, s)
	if !swapped {
		t.Skip("the walk never read Y after X")
	}
	if err == nil {
		t.Error("a sandboxed command's grandchild whose parent's pid a clean process took during the walk was allowed")
	}
}

// A client with a live ancestor whose stat the server may not read (a
// /proc mounted with hidepid, for a server that is not root) is refused at
// once, with a message that names the cause: a sandboxed process of the
// server's uid can hide so, by making itself not dumpable. It is not taken
// for an ancestor that vanished (walked again four times).
func TestPeerLineageHiddenAncestor(t *testing.T) {
	tk := subreaperTreeKiller(t)
	ln := listen(t)
	// The test process → Y → X (holds the socket).
	h := startHolder(t, ln, `/bin/bash --norc -c "`+holdScript+`" & wait`, &syscall.SysProcAttr{Setpgid: true})
	killDescendantsFirst(t, h.cmd.Process.Pid)
	y := h.cmd.Process.Pid
	xs := childPids(y)
	if len(xs) != 1 {
		t.Fatalf("Y has children %v, want one", xs)
	}
	if err := check(tk, h); err != nil {
		t.Fatalf("the client refused with nothing hidden: %v", err)
	}
	tk.clean.mu.Lock()
	tk.clean.start = nil // forget the clean walk
	tk.clean.mu.Unlock()

	hide := func(pid int) (procStat, error, bool) {
		return procStat{}, unix.ENOENT, pid == y
	}
	lineageSwap.Store(&hide)
	t.Cleanup(func() { lineageSwap.Store(nil) })
	var mu sync.Mutex
	reads := 0
	count := func(pid int) {
		if pid == xs[0] {
			mu.Lock()
			reads++
			mu.Unlock()
		}
	}
	lineageRead.Store(&count)
	t.Cleanup(func() { lineageRead.Store(nil) })
	err := check(tk, h)
	if err == nil || !strings.Contains(err.Error(), "hidepid") {
		t.Errorf("a client with a hidden ancestor: %v, want a refusal that names hidepid", err)
	}
	if reads != 1 {
		t.Errorf("the client's stat was read %d times, want 1 (one walk: not a vanished ancestor)", reads)
	}
}

// sandboxedGrandchild starts S, tracked as sandboxed by tk, whose child Y
// (in a session of its own with setsid) forks X, which connects to a new
// listener; it returns S's holder and the pids of Y and X. X is killed by
// pid at the end (it leaves S's group if Y dies), and the others deepest
// first.
func sandboxedGrandchild(t *testing.T, tk *TreeKiller, setsid bool) (s *holder, y, x int) {
	t.Helper()
	script := `/bin/bash --norc -c '/bin/bash --norc -c "` + holdScript + `" & wait' & wait`
	if setsid {
		script = "setsid " + script
	}
	s = startHolder(t, listen(t), script, &syscall.SysProcAttr{Setpgid: true})
	tk.trackSandboxed(s.cmd.Process.Pid)
	ys := childPids(s.cmd.Process.Pid)
	if len(ys) != 1 {
		t.Fatalf("S has children %v, want one", ys)
	}
	xs := childPids(ys[0])
	if len(xs) != 1 {
		t.Fatalf("Y has children %v, want one", xs)
	}
	t.Cleanup(func() {
		_ = unix.Kill(xs[0], unix.SIGKILL)
		for i := 0; i < 500 && unix.Kill(xs[0], 0) == nil; i++ {
			time.Sleep(10 * time.Millisecond)
		}
	})
	killDescendantsFirst(t, s.cmd.Process.Pid)
	return s, ys[0], xs[0]
}
