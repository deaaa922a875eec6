//go:build linux

package reap

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
)

// TestStartChildrenStuckForkStallsOthers: a fork whose exec hangs (a
// binary on a stuck mount) holds the fork lock shared for as long as it
// hangs. Had the reaper of unowned children, which every server runs, asked
// for the lock exclusively on the next SIGCHLD or Done, sync.RWMutex would
// have made every later fork wait behind that writer: one stuck start would
// have stopped every start of the server. The reaper only tries the lock
// (TryExclusive) and comes back later.
func TestStartChildrenStuckForkStallsOthers(t *testing.T) {
	r := StartChildren(nil, time.Millisecond)
	defer r.Close()
	time.Sleep(20 * time.Millisecond) // the first pass is over
	stuckFork(t)
	kickAll() // any command's end (an owner's Done)
	time.Sleep(50 * time.Millisecond)
	other := make(chan struct{})
	go func() {
		_, _ = Fork(func() (int, error) { return 0, nil })
		close(other)
	}()
	select {
	case <-other:
	case <-time.After(2 * time.Second):
		t.Fatal("a fork waited 2 s behind a stuck fork and the reaper's pass: one hung exec stops every start")
	}
}

// TestPassWhileForking: while a fork is in flight (stuck in its exec, or
// one of back-to-back forks), the reaper of unowned children still reaps
// the zombies born before that fork began, and never the child of a fork
// in flight that has exited before its registration: its owner gets the
// exit status.
func TestPassWhileForking(t *testing.T) {
	strayPid := unownedZombie(t)
	time.Sleep(30 * time.Millisecond) // the stuck fork begins ticks later
	stuckFork(t)
	r := StartChildren(nil, time.Millisecond) // it cannot have the fork lock now
	defer r.Close()

	var child *exec.Cmd
	_, err := Fork(func() (int, error) {
		child = exec.Command("/bin/sh", "-c", "exit 7")
		if err := child.Start(); err != nil {
			return 0, err
		}
		waitZombie(t, child.Process.Pid) // exited, not yet registered
		kickAll()
		deadline := time.Now().Add(5 * time.Second)
		for r.Reaped() == 0 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		kickAll()
		time.Sleep(50 * time.Millisecond) // more passes
		return child.Process.Pid, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.Reaped() != 1 {
		t.Errorf("reaped %d children while a fork was stuck, want 1 (the zombie born before it)", r.Reaped())
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", strayPid)); !os.IsNotExist(err) {
		t.Errorf("the unowned zombie born before the stuck fork is still there (%v)", err)
	}
	err = child.Wait()
	Done(child.Process.Pid)
	if child.ProcessState == nil || child.ProcessState.ExitCode() != 7 {
		t.Errorf("the exit status of a fork in flight's child was taken: %v", err)
	}
}

// waitZombie waits until pid is a zombie.
func waitZombie(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		if _, z := zombieBorn(pid); z {
			return
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); os.IsNotExist(err) {
			t.Fatalf("pid %d was reaped by someone else", pid)
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d is no zombie after 5 s", pid)
		}
	}
}

// TestPassOlderCost: a pass while forks are in flight costs what a pass
// under the fork lock costs, one cheap look at each unowned child, not a
// read of its /proc/PID/stat: an init server (every orphan of its
// commands is its child) with 1,000 live orphans spent 16.7 ms on such a
// pass instead of 0.9 ms under the lock, on every SIGCHLD while a start
// was under way. Only an exited child's stat is read (its start time).
func TestPassOlderCost(t *testing.T) {
	var live []*exec.Cmd
	defer func() {
		for _, c := range live {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}()
	for range 50 {
		c := exec.Command("/bin/sleep", "30") // not owned
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		live = append(live, c)
	}
	unownedZombie(t)
	time.Sleep(20 * time.Millisecond) // born a clock tick before the horizon

	r := &Reaper{log: zap.NewNop()} // an init server's: no unownedFirst
	before := statReads.Load()
	if !r.passOlder() {
		t.Error("the pass left a zombie")
	}
	if r.Reaped() != 1 {
		t.Errorf("reaped %d, want 1 (the exited unowned child)", r.Reaped())
	}
	if n := statReads.Load() - before; n > 1 {
		t.Errorf("the pass read %d stat files for 50 live children and 1 exited one, want 1", n)
	}
}

// TestYoungZombieWaitsForForkEnd: an unowned zombie born after the oldest
// fork in flight began waits for that fork's end, which calls for the
// pass that reaps it; meanwhile the reaper does not poll (a hung exec
// holds the horizon for as long as it hangs).
func TestYoungZombieWaitsForForkEnd(t *testing.T) {
	release := stuckFork(t)
	time.Sleep(30 * time.Millisecond) // the stray is born ticks later
	r := StartChildren(nil, time.Millisecond)
	defer r.Close()
	unownedZombie(t)
	kickAll()
	time.Sleep(300 * time.Millisecond)
	if n := r.older.Load(); n > 5 {
		t.Errorf("%d passes in 300 ms while a fork was stuck, want a few (no polling)", n)
	}
	if r.Reaped() != 0 {
		t.Fatalf("reaped %d while the fork it may come from was in flight", r.Reaped())
	}
	release()
	for deadline := time.Now().Add(2 * time.Second); r.Reaped() != 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the zombie born after the stuck fork began was not reaped within 2 s of its end")
		}
	}
}

// stuckFork starts a fork that stays in flight, as one whose exec hangs,
// until release (or the end of the test) and returns once it is.
func stuckFork(t *testing.T) (release func()) {
	t.Helper()
	hang := make(chan struct{})
	stuck := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = Fork(func() (int, error) {
			close(stuck)
			<-hang
			return 0, nil
		})
	}()
	<-stuck
	var once sync.Once
	release = func() { once.Do(func() { close(hang); <-done }) }
	t.Cleanup(release)
	return release
}

// unownedZombie starts a child nobody owns and returns its pid once it is
// a zombie.
func unownedZombie(t *testing.T) int {
	t.Helper()
	stray := exec.Command("/bin/true")
	if err := stray.Start(); err != nil {
		t.Fatal(err)
	}
	pid := stray.Process.Pid
	_ = stray.Process.Release()
	waitZombie(t, pid)
	return pid
}
