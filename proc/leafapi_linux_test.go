//go:build linux

package proc_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	"golang.org/x/sys/unix"

	"github.com/codexec/codex/proc"
)

// TestLeafForkRelease: a process forked through Leaf.Fork starts in the
// leaf, under its pids limit (the v1 twin's on hybrid hosts), and so does
// everything it forks, a setsid escapee included; Release kills them all
// and removes the leaf; a Fork after it starts nothing.
func TestLeafForkRelease(t *testing.T) {
	const limit = 33
	tk, err := proc.NewCgroupTreeKiller(zaptest.NewLogger(t), proc.Limits{MaxPids: limit})
	if err != nil {
		t.Skipf("no cgroup v2 leaves here: %v", err)
	}
	t.Cleanup(func() {
		if err := tk.Close(); err != nil {
			t.Error(err)
		}
	})
	if tk.Mode() != "cgroup" {
		t.Fatalf("NewCgroupTreeKiller in mode %q", tk.Mode())
	}
	leaf, err := tk.NewLeaf()
	if err != nil {
		t.Fatal(err)
	}
	dir := leaf.Dir()
	if filepath.Dir(dir) != proc.CgroupDir(tk) {
		t.Fatalf("leaf %s is not under the tree's directory %s", dir, proc.CgroupDir(tk))
	}
	sys := &syscall.SysProcAttr{Setsid: true}
	attr := &syscall.ProcAttr{Env: []string{"PATH=/usr/bin:/bin"}, Files: []uintptr{0, 1, 2}, Sys: sys}
	pid, err := leaf.Fork(sys, func() (int, error) {
		return syscall.ForkExec("/bin/sh", []string{"sh", "-c", "sleep 100 & setsid sleep 100 & exec sleep 100"}, attr)
	})
	if err != nil {
		t.Fatal(err)
	}
	var procs []string
	for deadline := time.Now().Add(10 * time.Second); len(procs) < 3; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			leaf.Release()
			reapPid(pid)
			t.Fatalf("the leaf holds %v, want the shell's three sleeps", procs)
		}
		procs = strings.Fields(readTrimmed(t, filepath.Join(dir, "cgroup.procs")))
	}
	limited := proc.PidsLeaf(tk, dir)
	if _, err := os.Stat(filepath.Join(limited, "pids.max")); err != nil {
		t.Logf("no pids controller for the leaves here: %v", err)
	} else {
		if got := readTrimmed(t, filepath.Join(limited, "pids.max")); got != strconv.Itoa(limit) {
			t.Errorf("pids.max %q, want %d", got, limit)
		}
		if got := readTrimmed(t, filepath.Join(limited, "pids.current")); got != "3" {
			t.Errorf("pids.current %q, want 3 (the sleeps)", got)
		}
	}

	leaf.Release()
	reapPid(pid)
	for _, p := range procs {
		n, _ := strconv.Atoi(p)
		if alive(n) {
			t.Errorf("process %d of the leaf survives Release", n)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("leaf %s still exists after Release: %v", dir, err)
	}
	leaf.Release() // idempotent
	called := false
	if _, err := leaf.Fork(&syscall.SysProcAttr{}, func() (int, error) { called = true; return 0, nil }); !errors.Is(err, proc.ErrLeafReleased) || called {
		t.Errorf("Fork after Release: %v, fork called %v", err, called)
	}
}

// TestNilLeaf: a nil Leaf forks as is and does nothing else.
func TestNilLeaf(t *testing.T) {
	var l *proc.Leaf
	sys := &syscall.SysProcAttr{}
	pid, err := l.Fork(sys, func() (int, error) { return 42, nil })
	if pid != 42 || err != nil || sys.UseCgroupFD {
		t.Errorf("nil Leaf Fork: %d, %v, cgroup fd %v", pid, err, sys.UseCgroupFD)
	}
	if l.Dir() != "" || l.Kill() != nil {
		t.Error("nil Leaf has a directory or fails to kill nothing")
	}
	l.Release()
}

// reapPid reaps our child pid.
func reapPid(pid int) {
	var ws unix.WaitStatus
	for {
		if _, err := unix.Wait4(pid, &ws, 0, nil); err != unix.EINTR {
			return
		}
	}
}
