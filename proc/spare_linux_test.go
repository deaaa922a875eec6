//go:build linux

package proc_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/codexec/codex/proc"
)

// TestSpareLeaf: after a spawn a spare leaf is made, empty and already
// carrying the per-process pids limit; the next process starts in it (and
// is counted by its pids.max), another spare follows, and Close removes
// them all.
func TestSpareLeaf(t *testing.T) {
	const limit = 77
	tk, err := proc.NewLimitedTreeKiller(zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel)), proc.Limits{MaxPids: limit})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = tk.Close()
		}
	})
	if tk.Mode() != "cgroup" {
		t.Skipf("cgroup mode unavailable here (got %s)", tk.Mode())
	}
	if proc.SpareLeaf(tk) != "" {
		t.Fatal("a spare leaf before any spawn")
	}
	first, _ := start(t, helper("exit", "0"), proc.Options{Tree: tk})
	finish(t, first)
	first.Close()

	spare := proc.SpareLeaf(tk)
	if spare == "" {
		t.Fatal("no spare leaf after a spawn")
	}
	limited := proc.PidsLeaf(tk, spare)
	if _, err := os.Stat(filepath.Join(limited, "pids.max")); err != nil {
		t.Skipf("no pids controller for the leaves here: %v", err)
	}
	if got := readTrimmed(t, filepath.Join(limited, "pids.max")); got != strconv.Itoa(limit) {
		t.Errorf("spare leaf pids.max %q, want %d", got, limit)
	}
	if got := readTrimmed(t, filepath.Join(spare, "cgroup.procs")); got != "" {
		t.Errorf("spare leaf holds %q", got)
	}

	p, _ := start(t, helper("sleep"), proc.Options{Tree: tk})
	if got := proc.CgroupLeaf(p); got != spare {
		t.Errorf("process leaf %s, want the spare %s", got, spare)
	}
	if got := readTrimmed(t, filepath.Join(spare, "cgroup.procs")); got != strconv.Itoa(p.Pid()) {
		t.Errorf("leaf holds %q, want pid %d", got, p.Pid())
	}
	// pids.current counts tasks: the Go helper's threads come and go, so
	// it must equal the helper's task count read around it, once.
	charged := false
	var got string
	var tasks int
	for i := 0; i < 50 && !charged; i++ {
		before := taskCount(p.Pid())
		got = readTrimmed(t, filepath.Join(limited, "pids.current"))
		tasks = taskCount(p.Pid())
		charged = before == tasks && got == strconv.Itoa(tasks)
	}
	if !charged {
		t.Errorf("pids.current of the process's limited leaf %q, want its %d tasks", got, tasks)
	}
	next := proc.SpareLeaf(tk)
	if next == "" || next == spare {
		t.Errorf("next spare %q after %q", next, spare)
	}
	p.Close()
	if _, err := os.Stat(spare); !os.IsNotExist(err) {
		t.Errorf("leaf %s still exists after Close: %v", spare, err)
	}

	dir := proc.CgroupDir(tk)
	closed = true
	if err := tk.Close(); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{next, proc.PidsLeaf(tk, next), dir} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s still exists after TreeKiller.Close: %v", d, err)
		}
	}
}

func readTrimmed(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// taskCount returns how many tasks (threads) pid has, 0 if unknown.
func taskCount(pid int) int {
	entries, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		return 0
	}
	return len(entries)
}
