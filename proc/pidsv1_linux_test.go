//go:build linux

package proc_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/codexec/codex/proc"
)

// hybridTreeKiller returns a cgroup-mode TreeKiller with a pids limit, or
// skips the test where the limit does not live in a cgroup v1 pids twin
// of each leaf (a host whose cgroup v2 tree has the pids controller).
func hybridTreeKiller(t *testing.T, limit int) *proc.TreeKiller {
	t.Helper()
	tk, err := proc.NewLimitedTreeKiller(zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel)), proc.Limits{MaxPids: int64(limit)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tk.Close() })
	if tk.Mode() != "cgroup" {
		t.Skipf("cgroup mode unavailable here (got %s)", tk.Mode())
	}
	p, _ := start(t, helper("exit", "0"), proc.Options{Tree: tk})
	leaf := proc.CgroupLeaf(p)
	twin := proc.PidsLeaf(tk, leaf)
	finish(t, p)
	p.Close()
	if twin == leaf || twin == "" {
		t.Skip("the pids limit is in the cgroup v2 leaves here: no v1 twins")
	}
	return tk
}

// startSleep starts a process in tk and returns it with its v1 pids leaf.
func startSleep(t *testing.T, tk *proc.TreeKiller) (*proc.Process, string) {
	t.Helper()
	p, _ := start(t, helper("sleep"), proc.Options{Tree: tk})
	twin := proc.PidsLeaf(tk, proc.CgroupLeaf(p))
	if got := readTrimmed(t, filepath.Join(twin, "pids.current")); got != "1" {
		t.Fatalf("pids.current of %s is %q, want 1", twin, got)
	}
	return p, twin
}

// TestPidsV1LeafReused: on a hybrid host the v1 pids twin of a process that
// ended is kept, empty, and carries the limit of a later process, instead
// of an rmdir now and a mkdir then.
func TestPidsV1LeafReused(t *testing.T) {
	const limit = 61
	tk := hybridTreeKiller(t, limit)
	p1, twin := startSleep(t, tk)
	p1.Close()
	if _, err := os.Stat(twin); err != nil {
		t.Fatalf("the pids leaf of the closed process was removed: %v", err)
	}
	// The spare leaf was made at p1's spawn; p2 takes it, and the spare
	// made at p2's spawn takes the kept twin.
	p2, _ := startSleep(t, tk)
	defer p2.Close()
	spare := proc.SpareLeaf(tk)
	if got := proc.PidsLeaf(tk, spare); got != twin {
		t.Fatalf("the spare leaf's pids twin is %s, want the kept %s", got, twin)
	}
	if got := readTrimmed(t, filepath.Join(twin, "pids.max")); got != strconv.Itoa(limit) {
		t.Errorf("kept pids leaf: pids.max %q, want %d", got, limit)
	}
	p3, twin3 := startSleep(t, tk)
	defer p3.Close()
	if twin3 != twin {
		t.Errorf("third process in pids leaf %s, want the kept %s", twin3, twin)
	}
}

// TestPidsV1ReuseResetsLimit: a process that raised the pids.max of its own
// v1 leaf (an unsandboxed command running as root can) does not hand the
// raised limit to the next process that gets the leaf.
func TestPidsV1ReuseResetsLimit(t *testing.T) {
	const limit = 62
	tk := hybridTreeKiller(t, limit)
	p1, twin := startSleep(t, tk)
	if err := os.WriteFile(filepath.Join(twin, "pids.max"), []byte("max"), 0); err != nil {
		t.Fatal(err)
	}
	p1.Close()
	p2, _ := startSleep(t, tk) // in the spare made before p1 ended
	defer p2.Close()
	p3, twin3 := startSleep(t, tk)
	defer p3.Close()
	if twin3 != twin {
		t.Fatalf("third process in pids leaf %s, want the kept %s", twin3, twin)
	}
	if got := readTrimmed(t, filepath.Join(twin3, "pids.max")); got != strconv.Itoa(limit) {
		t.Errorf("reused pids leaf: pids.max %q, want %d", got, limit)
	}
}

// TestPidsV1BusyLeafNotReused: a v1 pids leaf that still holds a task when
// its process ends (one moved there behind the server's back, or a zombie
// not yet released) is not handed to another process, which would then
// start with part of its pids budget taken.
func TestPidsV1BusyLeafNotReused(t *testing.T) {
	const limit = 63
	tk := hybridTreeKiller(t, limit)
	p1, twin := startSleep(t, tk)
	intruder := exec.Command("sleep", "60")
	if err := intruder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = intruder.Process.Kill()
		_ = intruder.Wait()
	}()
	if err := os.WriteFile(filepath.Join(twin, "cgroup.procs"), []byte(strconv.Itoa(intruder.Process.Pid)), 0); err != nil {
		t.Fatal(err)
	}
	p1.Close()
	p2, _ := startSleep(t, tk)
	defer p2.Close()
	p3, twin3 := startSleep(t, tk)
	defer p3.Close()
	if twin3 == twin {
		t.Fatalf("third process in the pids leaf %s that still holds pid %d", twin3, intruder.Process.Pid)
	}
	// Out again, so that TreeKiller.Close can remove the leaf.
	home := filepath.Dir(filepath.Dir(twin))
	if err := os.WriteFile(filepath.Join(home, "cgroup.procs"), []byte(strconv.Itoa(intruder.Process.Pid)), 0); err != nil {
		t.Fatal(err)
	}
}
