//go:build linux

package proc

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// staleServerDir makes base/name with one leaf holding a `sleep` child,
// as a server would have left it, and returns the child.
func staleServerDir(t *testing.T, base, name string) *exec.Cmd {
	t.Helper()
	dir := filepath.Join(base, name)
	leaf := filepath.Join(dir, "1")
	for _, d := range []string{dir, leaf} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_ = writeFile(filepath.Join(dir, "cgroup.kill"), "1")
		_ = rmdirRetry(leaf, time.Second)
		_ = rmdirRetry(dir, time.Second)
	})
	fd, err := unix.Open(leaf, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	cmd := exec.Command("/bin/sleep", "1000")
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start into a cgroup: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// sweepBase makes a cgroup below ours for a sweep test to play the
// parent of server directories, removed at the end; it skips without a
// writable cgroup v2.
func sweepBase(t *testing.T, prefix string) string {
	t.Helper()
	mnt, err := cgroup2Mount()
	if err != nil {
		t.Skip(err)
	}
	rel, err := selfCgroup()
	if err != nil {
		t.Skip(err)
	}
	base := filepath.Join(mnt, rel, prefix+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(base, 0o755); err != nil {
		t.Skipf("no writable cgroup v2: %v", err)
	}
	t.Cleanup(func() { _ = rmdirRetry(base, time.Second) })
	return base
}

// neverPid is a pid no process ever has (above the kernel's largest
// pid_max, 2^22): the pid of a dead server that no later fork can bring
// back, as the pid of an exited child can while other tests set the
// host's ns_last_pid.
const neverPid = 1<<22 + 1

// exitedWithin reports whether cmd exits within d (and reaps it).
func exitedWithin(cmd *exec.Cmd, d time.Duration) bool {
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		_ = cmd.Process.Kill()
		<-done
		return false
	}
}

// The start-up sweep must not take a live server's directory for a dead
// one because its pid means nothing in our PID namespace: ownership is the
// flock a live server holds on its own directory.
func TestSweepSparesLockedDirectory(t *testing.T) {
	if !kernelAtLeast(5, 14) {
		t.Skip("needs cgroup.kill (Linux 5.14)")
	}
	base := sweepBase(t, "codex-sweep-test-")

	deadPid := strconv.Itoa(neverPid)

	dead := staleServerDir(t, base, "codex-exec-"+deadPid)
	foreign := staleServerDir(t, base, "codex-exec-"+deadPid+"-1")
	// The foreign server is alive (in another PID namespace): it holds
	// the lock on its directory.
	lock, err := unix.Open(filepath.Join(base, "codex-exec-"+deadPid+"-1"), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(lock)
	if err := unix.Flock(lock, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}

	sweepStaleCgroups(zap.NewNop(), base)
	if !exitedWithin(dead, 5*time.Second) {
		t.Error("the dead server's process survived the sweep")
	}
	if _, err := os.Stat(filepath.Join(base, "codex-exec-"+deadPid)); !os.IsNotExist(err) {
		t.Errorf("the dead server's directory survived the sweep: %v", err)
	}
	if _, err := os.Stat(filepath.Join(base, "codex-exec-"+deadPid+"-1")); err != nil {
		t.Errorf("the live foreign server's directory was swept: %v", err)
	}
	if st, err := readStat(foreign.Process.Pid); err != nil || st.state == 'Z' {
		t.Errorf("the live foreign server's process was killed: %v %c", err, st.state)
	}

	// Once that server is gone (its lock released), the next sweep takes it.
	_ = unix.Close(lock)
	sweepStaleCgroups(zap.NewNop(), base)
	if !exitedWithin(foreign, 5*time.Second) {
		t.Error("the foreign server's process survived its server")
	}
}

// A dead server's directory with a cgroup below a leaf (made by a command
// inside it) is removed whole: a child cgroup keeps its parent EBUSY for as
// long as one retries, and every server start waited 200 ms per such leaf.
func TestSweepRemovesNestedCgroups(t *testing.T) {
	base := sweepBase(t, "codex-sweep-nested-")
	dir := filepath.Join(base, "codex-exec-"+strconv.Itoa(neverPid))
	if err := os.MkdirAll(filepath.Join(dir, "2", "sub", "deeper"), 0o755); err != nil {
		t.Fatal(err)
	}
	sweepStaleCgroups(zap.NewNop(), base)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the dead server's nested directory survived the sweep: %v", err)
	}
}

// A dead server's directory named with our own pid (a container started
// again in the same cgroup gives its server the same pid) is swept with
// what runs in it, as any dead server's; a directory a TreeKiller of ours
// owns is not, with or without its lock.
func TestSweepTakesDeadServerWithOurPid(t *testing.T) {
	base := sweepBase(t, "codex-sweep-ourpid-")
	name := "codex-exec-" + strconv.Itoa(os.Getpid())
	stale := staleServerDir(t, base, name)
	if err := os.Mkdir(filepath.Join(base, name+"-1"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rmdirRetry(filepath.Join(base, name+"-1"), time.Second) })
	live := filepath.Join(base, name+"-2") // ours, unproven: no lock held
	if err := os.Mkdir(live, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rmdirRetry(live, time.Second) })
	ownDirs.add(live)
	t.Cleanup(func() { ownDirs.remove(live) })

	sweepStaleCgroups(zap.NewNop(), base)
	if !exitedWithin(stale, 5*time.Second) {
		t.Error("the process of the dead server with our pid survived the sweep")
	}
	for _, n := range []string{name, name + "-1"} {
		if _, err := os.Stat(filepath.Join(base, n)); !os.IsNotExist(err) {
			t.Errorf("%s, a dead server's with our pid, survived the sweep: %v", n, err)
		}
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("a directory we own was swept: %v", err)
	}
}

// A TreeKiller never takes the directory name of an earlier one of the
// same process, though that one is gone: a kill by path that comes late
// from the old one (a timer, a leftover) must not find a leaf of the new.
func TestOwnedDirNamesNotReused(t *testing.T) {
	seen := map[string]bool{}
	for range 3 {
		tk, err := newTreeKiller(zap.NewNop(), true, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if tk.Mode() != modeCgroup {
			_ = tk.Close()
			t.Skip("no writable cgroup v2 here")
		}
		dir := tk.dir
		if err := tk.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Fatalf("%s left after Close: %v", dir, err)
		}
		if seen[filepath.Base(dir)] {
			t.Fatalf("%s taken again by a later TreeKiller of the same process", dir)
		}
		seen[filepath.Base(dir)] = true
	}
}
