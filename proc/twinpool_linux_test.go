//go:build linux

package proc_test

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/codexec/codex/proc"
)

// TestV1TwinReuse: on hybrid hosts the cgroup v1 pids twin of a finished
// leaf is kept for the next leaf, which gets it empty and with its own
// pids.max written again, whatever the previous command set; a twin that
// still holds a task is removed, never reused.
func TestV1TwinReuse(t *testing.T) {
	const limit = 41
	tk, err := proc.NewCgroupTreeKiller(zaptest.NewLogger(t), proc.Limits{MaxPids: limit})
	if err != nil {
		t.Skipf("no cgroup v2 leaves here: %v", err)
	}
	t.Cleanup(func() {
		if err := tk.Close(); err != nil {
			t.Error(err)
		}
	})
	first, err := tk.NewLeaf()
	if err != nil {
		t.Fatal(err)
	}
	twin := proc.PidsLeaf(tk, first.Dir())
	if twin == first.Dir() {
		t.Skip("no cgroup v1 pids twins here: pids.max is in the v2 leaf")
	}
	// The command raises its own limit, as a root command can.
	if err := os.WriteFile(filepath.Join(twin, "pids.max"), []byte("max"), 0); err != nil {
		t.Fatal(err)
	}
	ino := inode(t, twin)
	first.Release()
	if _, err := os.Stat(twin); !os.IsNotExist(err) {
		t.Fatalf("twin %s still at its name after Release: %v", twin, err)
	}
	pool := proc.PooledTwins(tk)
	if len(pool) == 0 {
		t.Fatal("the empty twin was not kept for reuse")
	}

	second, err := tk.NewLeaf()
	if err != nil {
		t.Fatal(err)
	}
	twin2 := proc.PidsLeaf(tk, second.Dir())
	if got := readTrimmed(t, filepath.Join(twin2, "pids.max")); got != strconv.Itoa(limit) {
		t.Errorf("reused twin's pids.max %q, want %d", got, limit)
	}
	if got := readTrimmed(t, filepath.Join(twin2, "tasks")); got != "" {
		t.Errorf("reused twin holds tasks %q", got)
	}
	if inode(t, twin2) != ino {
		t.Errorf("the second leaf's twin %s is not the pooled one (pool %v)", twin2, pool)
	}
	if left := proc.PooledTwins(tk); slices.Equal(left, pool) {
		t.Errorf("the pool %v still lists the reused twin", left)
	}

	// A twin with a live task goes, it is not pooled.
	sys := &syscall.SysProcAttr{}
	attr := &syscall.ProcAttr{Env: []string{}, Files: []uintptr{0, 1, 2}, Sys: sys}
	pid, err := second.Fork(sys, func() (int, error) {
		return syscall.ForkExec("/bin/sleep", []string{"sleep", "100"}, attr)
	})
	if err != nil {
		t.Fatal(err)
	}
	before := proc.PooledTwins(tk)
	second.Release() // the sleep is killed but not reaped: still charged to the twin
	reapPid(pid)
	if after := proc.PooledTwins(tk); !slices.Equal(after, before) {
		t.Errorf("a twin with a task charged to it went into the pool: %v, was %v", after, before)
	}
	if _, err := os.Stat(twin2); !os.IsNotExist(err) {
		t.Errorf("twin %s of the released leaf still exists: %v", twin2, err)
	}
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Sys().(*syscall.Stat_t).Ino
}
