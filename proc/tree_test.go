//go:build linux

package proc_test

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/codexec/codex/internal/reap"
	"github.com/codexec/codex/proc"
)

// The tests in this file are deliberately not parallel: Go runs them before
// any parallel test resumes, so the subreaper's orphan reaper never sees
// the children of unrelated tests.

var treeModes = []string{"cgroup", "subreaper"}

// newTree returns a TreeKiller in the given mode, closed at the end of the
// test. It skips the test if the mode is unavailable.
func newTree(t *testing.T, mode string) *proc.TreeKiller {
	t.Helper()
	log := zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel))
	var (
		tk  *proc.TreeKiller
		err error
	)
	if mode == "cgroup" {
		tk, err = proc.NewTreeKiller(log)
	} else {
		tk, err = proc.NewSubreaperTreeKiller(log)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tk.Close(); err != nil {
			t.Errorf("TreeKiller.Close: %v", err)
		}
	})
	if tk.Mode() != mode {
		t.Skipf("%s mode unavailable here (got %s)", mode, tk.Mode())
	}
	return tk
}

// eventuallyDead waits until pid no longer runs (gone or a zombie).
func eventuallyDead(t *testing.T, pid int, what string) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("%s (pid %d) still alive", what, pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// eventuallyGone waits until /proc/<pid> disappears, i.e. it was reaped.
func eventuallyGone(t *testing.T, pid int, what string) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); os.IsNotExist(err) {
			return
		}
		if time.Now().After(deadline) {
			stat, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
			t.Fatalf("%s (pid %d) never reaped: %s (we are %d)", what, pid, stat, os.Getpid())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestTreeKillSetsidDescendant: Kill takes a grandchild that escaped the
// process group with setsid, in both modes, for pipes and PTYs.
func TestTreeKillSetsidDescendant(t *testing.T) {
	for _, mode := range treeModes {
		for _, tty := range []bool{false, true} {
			t.Run(mode+"/tty="+strconv.FormatBool(tty), func(t *testing.T) {
				tk := newTree(t, mode)
				spec := helper("setsid-grandchild")
				spec.TTY = tty
				p, s := start(t, spec, proc.Options{Tree: tk})
				gc := grandchildPid(t, s)
				if !alive(gc) {
					t.Fatalf("grandchild %d not running", gc)
				}
				killed := time.Now()
				if err := p.Kill(); err != nil {
					t.Fatal(err)
				}
				if code := finish(t, p); code != 137 {
					t.Errorf("exit code %d, want 137", code)
				}
				if d := time.Since(killed); d >= proc.KillGrace {
					t.Errorf("EOF took %v: the escaped grandchild kept stdout open", d)
				}
				eventuallyDead(t, gc, "setsid grandchild")
			})
		}
	}
}

// TestTreeKillShellSetsid is the scenario of docs/protocol.md §7.8 with the
// setsid(1) tool, where it exists.
func TestTreeKillShellSetsid(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid tool")
	}
	for _, mode := range treeModes {
		t.Run(mode, func(t *testing.T) {
			tk := newTree(t, mode)
			p, s := start(t, sh("setsid sleep 1000 & echo gc:$!; wait"), proc.Options{Tree: tk})
			gc := grandchildPid(t, s)
			if err := p.Kill(); err != nil {
				t.Fatal(err)
			}
			finish(t, p)
			eventuallyDead(t, gc, "setsid sleep")
		})
	}
}

// TestTreeKillLeafAtReap: a kill before the reap signals the process
// group and leaves the leaf to the reap, which finds the setsid
// grandchild still in it and kills the leaf; the leaf is gone by the
// close, and the grandchild's stdout does not hold up the output's EOF.
func TestTreeKillLeafAtReap(t *testing.T) {
	tk := newTree(t, "cgroup")
	p, s := start(t, helper("setsid-grandchild"), proc.Options{Tree: tk})
	gc := grandchildPid(t, s)
	leaf := proc.CgroupLeaf(p)
	killed := time.Now()
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	wait(t, p.OutputDone(), "output EOF")
	if d := time.Since(killed); d >= proc.TreeKillBackstop {
		t.Errorf("EOF took %v: the grandchild was left to the backstop, not killed at the reap", d)
	}
	eventuallyDead(t, gc, "setsid grandchild")
	if code := finish(t, p); code != 137 {
		t.Errorf("exit code %d, want 137", code)
	}
	p.Close()
	if _, err := os.Stat(leaf); !os.IsNotExist(err) {
		t.Errorf("leaf %s after Close: %v", leaf, err)
	}
}

// TestTreeKillBackstop: when the child is not reaped after a kill that
// signalled its group (here the group kill is left out, as if the child
// were stuck where SIGKILL cannot reach it yet), the backstop kills the
// whole leaf: the child and the grandchild that called setsid.
func TestTreeKillBackstop(t *testing.T) {
	tk := newTree(t, "cgroup")
	p, s := start(t, helper("setsid-grandchild"), proc.Options{Tree: tk})
	gc := grandchildPid(t, s)
	proc.ArmTreeKillBackstop(p)
	wait(t, p.Exited(), "exit after the backstop")
	if code := p.ExitCode(); code != 137 {
		t.Errorf("exit code %d, want 137 (killed by the backstop)", code)
	}
	eventuallyDead(t, gc, "setsid grandchild")
	p.Close()
}

// TestTreeKillAfterExit: after the direct child exited, a setsid orphan
// still holds stdout. In cgroup mode Kill finds it in the leaf; in
// subreaper mode it can no longer be attributed, so the output is
// force-closed and TreeKiller.Close kills it.
func TestTreeKillAfterExit(t *testing.T) {
	for _, mode := range treeModes {
		t.Run(mode, func(t *testing.T) {
			tk := newTree(t, mode)
			p, s := start(t, helper("setsid-orphan"), proc.Options{Tree: tk})
			gc := grandchildPid(t, s)
			wait(t, p.Exited(), "exit")
			if p.ExitCode() != 0 {
				t.Fatalf("exit code %d", p.ExitCode())
			}
			if isDone(p.OutputDone()) || !alive(gc) {
				t.Fatal("the orphan should hold stdout open")
			}
			if err := p.Kill(); err != nil {
				t.Fatal(err)
			}
			wait(t, p.OutputDone(), "output EOF")
			p.Close()
			if mode == "cgroup" {
				eventuallyDead(t, gc, "orphan after Kill")
				return
			}
			if err := tk.Close(); err != nil {
				t.Fatal(err)
			}
			eventuallyGone(t, gc, "orphan after TreeKiller.Close")
		})
	}
}

// TestCgroupLeafLifecycle: one leaf per process, removed after the end;
// the owned directory is removed by Close.
func TestCgroupLeafLifecycle(t *testing.T) {
	tk := newTree(t, "cgroup")
	dir := proc.CgroupDir(tk)
	p, _ := start(t, helper("sleep"), proc.Options{Tree: tk})
	leaf := proc.CgroupLeaf(p)
	procs, err := os.ReadFile(leaf + "/cgroup.procs")
	if err != nil || string(procs) != strconv.Itoa(p.Pid())+"\n" {
		t.Fatalf("leaf %s holds %q (%v), want pid %d", leaf, procs, err, p.Pid())
	}
	p.Close()
	if _, err := os.Stat(leaf); !os.IsNotExist(err) {
		t.Errorf("leaf %s still exists after Close: %v", leaf, err)
	}

	p, _ = start(t, helper("exit", "0"), proc.Options{Tree: tk})
	finish(t, p)
	p.Close()
	if _, err := os.Stat(proc.CgroupLeaf(p)); !os.IsNotExist(err) {
		t.Errorf("leaf of a finished process still exists: %v", err)
	}
	if err := tk.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("owned directory %s still exists after Close: %v", dir, err)
	}
}

// TestSubreaperReapsOrphans: an orphan that re-parents to the server is
// reaped when it exits, and the tracked child's exit status is not stolen.
func TestSubreaperReapsOrphans(t *testing.T) {
	tk := newTree(t, "subreaper")
	for range 5 {
		p, s := start(t, helper("grandchild"), proc.Options{Tree: tk})
		gc := grandchildPid(t, s)
		if code := finish(t, p); code != 0 {
			t.Errorf("exit code %d, want 0 (status stolen?)", code)
		}
		eventuallyGone(t, gc, "orphan")
	}
	for range 20 {
		p, _ := start(t, helper("exit", "5"), proc.Options{Tree: tk})
		if code := finish(t, p); code != 5 {
			t.Errorf("exit code %d, want 5", code)
		}
	}
}

// TestKillAfterReapSparesReusedPid: Kill after the reap must not reach a
// stranger that now owns the child's number. The child exits while a
// grandchild that called setsid keeps its output open, so the group is
// empty and the number free; a new process takes it (ns_last_pid) and
// becomes a group and session leader, as every command we start does.
// Before the fix, Kill sent SIGKILL to that stranger's group (pipes still
// open) and, in subreaper mode, walked the stranger's session.
func TestKillAfterReapSparesReusedPid(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to choose the next pid (ns_last_pid)")
	}
	for _, mode := range append([]string{"none"}, treeModes...) {
		t.Run(mode, func(t *testing.T) {
			var opts proc.Options
			if mode != "none" {
				opts.Tree = newTree(t, mode)
			}
			p, s := start(t, sh("setsid sleep 60 & echo gc:$!; exit 0"), opts)
			s.waitFor(t, "gc:")
			wait(t, p.Exited(), "exit")
			gc, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(s.String(), "gc:")))
			if err != nil {
				t.Fatalf("output %q: %v", s, err)
			}
			killAtEnd(t, gc)
			victim := spawnAtPid(t, p.Pid())
			if err := p.Kill(); err != nil {
				t.Fatalf("Kill: %v", err)
			}
			time.Sleep(100 * time.Millisecond)
			if !alive(victim) {
				t.Fatalf("Kill after the reap of %d killed the unrelated process that reused its number", p.Pid())
			}
		})
	}
}

// spawnAtPid starts `sleep 60` in its own session with the process id pid
// (free now), killed at the end of the test. It writes ns_last_pid and
// retries while other processes take the number first.
func spawnAtPid(t *testing.T, pid int) int {
	t.Helper()
	for try := 0; try < 200; try++ {
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(pid-1)), 0); err != nil {
			t.Skipf("cannot choose the next pid: %v", err)
		}
		cmd := exec.Command("sleep", "60")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if cmd.Process.Pid == pid {
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			return pid
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	t.Skipf("pid %d was taken by others 200 times", pid)
	return 0
}

// TestSubreaperNeverStallsForks: a fork whose exec hangs holds package
// reap's fork lock shared. The subreaper mode's orphan reaper, woken
// meanwhile, must not queue for the lock exclusively: sync.RWMutex would
// then make every later fork (every start of the server) wait behind it.
func TestSubreaperNeverStallsForks(t *testing.T) {
	tree, err := proc.NewSubreaperTreeKiller(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	release := make(chan struct{})
	stuck := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = reap.Fork(func() (int, error) {
			close(stuck)
			<-release // an exec that hangs
			return 0, nil
		})
	}()
	<-stuck
	defer func() { close(release); <-done }()
	_ = syscall.Kill(os.Getpid(), syscall.SIGCHLD) // wakes the reaper
	time.Sleep(50 * time.Millisecond)
	other := make(chan struct{})
	go func() {
		_, _ = reap.Fork(func() (int, error) { return 0, nil })
		close(other)
	}()
	select {
	case <-other:
	case <-time.After(2 * time.Second):
		t.Fatal("a fork waited 2 s behind a stuck fork and the orphan reaper: one hung exec stops every start")
	}
}
