//go:build linux

package reap

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
	"unsafe"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestReaperLeavesOwnedChildren runs owned children that exit with known
// codes, at once and after short sleeps, while other children leave
// orphans that die: the Reaper (a subreaper here) must reap every orphan
// and never an owned child, whose Wait would then fail with ECHILD.
func TestReaperLeavesOwnedChildren(t *testing.T) {
	r, err := Start(nil)
	if err != nil {
		t.Fatal(err)
	}
	runOwned(t, 120, func(i int) string {
		if i%3 == 0 {
			return "sleep 0.05 >/dev/null 2>&1 & (sleep 0.02 &) ; exit " + fmt.Sprint(i%7)
		}
		return fmt.Sprintf("sleep 0.0%d; exit %d", i%4, i%7)
	})
	deadline := time.Now().Add(5 * time.Second)
	for {
		left, _ := childPids()
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("children left: %v", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.Close()
	if r.Reaped() < 40 {
		t.Errorf("reaped %d orphans, want at least 40", r.Reaped())
	}
	if len(owned.pids) != 0 {
		t.Errorf("owned pids left: %v", owned.pids)
	}
}

// TestReaperBlindPass checks the pass without /proc: it leaves an owned
// zombie alone (which may end the pass early) and reaps an unowned one
// once the owned one is released.
func TestReaperBlindPass(t *testing.T) {
	r := &Reaper{log: zap.NewNop()}
	stray := exec.Command("/bin/true") // started without StartCmd: not owned
	if err := stray.Start(); err != nil {
		t.Fatal(err)
	}
	pid := stray.Process.Pid
	_ = stray.Process.Release()
	mine := exec.Command("/bin/sh", "-c", "exit 5")
	if err := StartCmd(mine); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // both are zombies now
	Exclusive(r.passBlind)
	if err := WaitCmd(mine); mine.ProcessState == nil || mine.ProcessState.ExitCode() != 5 {
		t.Fatalf("the owned child's status was taken: %v", err)
	}
	Exclusive(r.passBlind)
	if r.Reaped() != 1 {
		t.Errorf("reaped %d, want 1", r.Reaped())
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); !os.IsNotExist(err) {
		t.Errorf("the unowned zombie %d is still there (%v)", pid, err)
	}
}

// TestStartChildren: the reaper of unowned children does not make us a
// subreaper, reaps a child nobody owns (as a command's clone(CLONE_PARENT)
// sibling would be) after its SIGCHLD or an owner's Done, and leaves the status of
// every owned child to its owner, while many end at once.
func TestStartChildren(t *testing.T) {
	r := StartChildren(nil, 20*time.Millisecond)
	defer r.Close()
	var flag int32
	if err := unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&flag)), 0, 0, 0); err != nil || flag != 0 {
		t.Fatalf("subreaper flag %d (%v), want 0", flag, err)
	}
	var strays []int
	for range 5 {
		stray := exec.Command("/bin/true") // not owned
		if err := stray.Start(); err != nil {
			t.Fatal(err)
		}
		strays = append(strays, stray.Process.Pid)
		_ = stray.Process.Release()
	}
	runOwned(t, 60, func(i int) string { return fmt.Sprintf("exit %d", i%7) })
	kickAll()
	for _, pid := range strays {
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); os.IsNotExist(err) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the unowned child %d is still there after 5 s", pid)
			}
		}
	}
	if r.Reaped() != int64(len(strays)) {
		t.Errorf("reaped %d, want %d", r.Reaped(), len(strays))
	}
}

// TestStartChildrenStandsAside: while another reaper keeps books on our
// children (StandAside: proc's subreaper mode), the reaper of unowned
// children leaves them alone; then it takes them again.
func TestStartChildrenStandsAside(t *testing.T) {
	resume := StandAside()
	r := StartChildren(nil, time.Millisecond)
	defer r.Close()
	stray := exec.Command("/bin/true")
	if err := stray.Start(); err != nil {
		t.Fatal(err)
	}
	kickAll()
	time.Sleep(100 * time.Millisecond)
	if r.Reaped() != 0 {
		t.Errorf("reaped %d children while standing aside, want 0", r.Reaped())
	}
	if err := stray.Wait(); err != nil {
		t.Errorf("the child's status: %v", err)
	}
	resume()
	other := exec.Command("/bin/true")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	pid := other.Process.Pid
	_ = other.Process.Release()
	for deadline := time.Now().Add(5 * time.Second); r.Reaped() != 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the unowned child %d was not reaped after the stand-aside ended", pid)
		}
	}
}

// runOwned runs n owned children at once (RunCmd), child i running
// script(i), which must exit with i%7, and fails t for each whose exit
// status did not reach it.
func runOwned(t *testing.T, n int, script func(i int) string) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command("/bin/sh", "-c", script(i))
			err := RunCmd(cmd)
			if got := cmd.ProcessState; got == nil || got.ExitCode() != i%7 {
				errs <- fmt.Errorf("child %d: %v (state %v), want exit %d", i, err, got, i%7)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
