//go:build linux

package proc

import (
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
)

// procsJudged records the pids the peer search looks at (reads anything
// of under /proc) until the test ends.
func procsJudged(t *testing.T) func(pid int) bool { return recordPids(t, &procJudged) }

// selfConn connects the test process to ln and returns the server end.
func selfConn(t *testing.T, ln net.Listener) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = ln.(*net.TCPListener).SetDeadline(time.Now().Add(10 * time.Second))
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// The cost of the peer check does not grow with the processes on the
// host: when the kernel names the socket's cgroup, the holder is looked
// for among that cgroup's processes, and no process elsewhere (here: the
// server's own commands, each in its leaf) is judged or read.
func TestPeerSearchStaysInSocketCgroup(t *testing.T) {
	tk := cgroupTreeKiller(t)
	ln := listen(t)
	var decoys []*holder
	for range 8 {
		slot, err := tk.prepare(false)
		if err != nil {
			t.Fatal(err)
		}
		decoys = append(decoys, startHolder(t, ln, holdScript, &syscall.SysProcAttr{Setpgid: true, UseCgroupFD: true, CgroupFD: slot.fd}))
		slot.closeFD()
	}
	if !peerSocket(t, decoys[0]).HasCgroupID {
		t.Skip("the kernel does not report a socket's cgroup")
	}
	judged := procsJudged(t)
	read := fdTablesRead(t)
	s := selfConn(t, ln)
	if err := tk.CheckPeer(s.LocalAddr(), s.RemoteAddr()); err != nil {
		t.Fatalf("the test process's own connection was refused: %v", err)
	}
	if err := check(tk, decoys[3]); err != nil {
		t.Fatalf("a command in an unsandboxed leaf was refused: %v", err)
	}
	for i, d := range decoys {
		if pid := d.cmd.Process.Pid; (i != 3 && judged(pid)) || (i != 3 && read(pid)) {
			t.Errorf("pid %d, in a cgroup neither peer socket names, was looked at", pid)
		}
	}
}

// A server that cannot open a cgroup by its id (not root) learns where
// the cgroups whose sockets it allowed live: the first check from a
// cgroup searches every process, the next ones that cgroup only.
func TestPeerSearchLearnsCgroups(t *testing.T) {
	tk := cgroupTreeKiller(t)
	noHandles.Store(true)
	t.Cleanup(func() { noHandles.Store(false) })
	ln := listen(t)
	slot, err := tk.prepare(false)
	if err != nil {
		t.Fatal(err)
	}
	decoy := startHolder(t, ln, holdScript, &syscall.SysProcAttr{Setpgid: true, UseCgroupFD: true, CgroupFD: slot.fd})
	slot.closeFD()
	if !peerSocket(t, decoy).HasCgroupID {
		t.Skip("the kernel does not report a socket's cgroup")
	}
	judged := procsJudged(t)
	s := selfConn(t, ln)
	if err := tk.CheckPeer(s.LocalAddr(), s.RemoteAddr()); err != nil {
		t.Fatalf("refused: %v", err)
	}
	if !judged(decoy.cmd.Process.Pid) {
		t.Fatal("the first check did not search every process (was the cgroup opened by its id?)")
	}
	judged = procsJudged(t)
	s2 := selfConn(t, ln)
	if err := tk.CheckPeer(s2.LocalAddr(), s2.RemoteAddr()); err != nil {
		t.Fatalf("refused: %v", err)
	}
	if judged(decoy.cmd.Process.Pid) {
		t.Error("the second check from the same cgroup searched outside it")
	}
}

// The process search is a storm of blocking syscalls, each of which can
// make the Go runtime start a thread: however many upgrades arrive at
// once, only a few searches run at a time.
func TestPeerSearchesBounded(t *testing.T) {
	tk, err := newTreeKiller(zaptest.NewLogger(t), true, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tk.Close() })
	ln := listen(t)
	s := selfConn(t, ln)
	var inside, most atomic.Int32
	release := make(chan struct{})
	f := func(int) {
		n := inside.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		<-release
		inside.Add(-1)
	}
	fdTableRead.Store(&f)
	t.Cleanup(func() { fdTableRead.Store(nil) })
	const upgrades = 40
	var wg sync.WaitGroup
	errs := make(chan error, upgrades)
	for range upgrades {
		wg.Go(func() { errs <- tk.CheckPeer(s.LocalAddr(), s.RemoteAddr()) })
	}
	time.Sleep(500 * time.Millisecond)
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("refused: %v", err)
		}
	}
	if m := most.Load(); m > maxPeerSearches {
		t.Errorf("%d process searches ran at once, want at most %d", m, maxPeerSearches)
	}
}

// Searches that must go over every process (here: sockets held only by a
// sandboxed process) wait for a scan slot without holding a slot of the
// first round: while every scan slot is taken, other clients' checks
// still go through at once.
func TestPeerScansHoldUpNoFirstRound(t *testing.T) {
	tk := subreaperTreeKiller(t)
	ln := listen(t)
	plain := startHolder(t, ln, holdScript, &syscall.SysProcAttr{Setpgid: true})
	sbx := startHolder(t, ln, holdScript, &syscall.SysProcAttr{Setpgid: true})
	tk.trackSandboxed(sbx.cmd.Process.Pid)
	if !peerSocket(t, sbx).HasCgroupID {
		t.Skip("the kernel does not report a socket's cgroup")
	}
	for range peerScanSlots {
		peerScanSem <- struct{}{}
	}
	freed := false
	free := func() {
		if !freed {
			freed = true
			for range peerScanSlots {
				<-peerScanSem
			}
		}
	}
	t.Cleanup(free)
	var wg sync.WaitGroup
	for range peerRoundSlots {
		wg.Go(func() {
			if err := check(tk, sbx); err == nil {
				t.Error("a sandboxed process's socket was allowed")
			}
		})
	}
	for deadline := time.Now().Add(20 * time.Second); scansQueued.Load() < peerRoundSlots; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d scans waiting for a slot", scansQueued.Load(), peerRoundSlots)
		}
	}
	start := time.Now()
	if err := check(tk, plain); err != nil {
		t.Errorf("refused: %v", err)
	}
	if d := time.Since(start); d >= peerSlotWait*3/4 {
		t.Errorf("a check waited %v while full scans waited for their slots", d)
	}
	free()
	wg.Wait()
}
