package e2e

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// ownCgroupDir returns the cgroup v2 directory this test runs in (the
// server started by the test makes its directory there too).
func ownCgroupDir(t *testing.T) string {
	t.Helper()
	mounts, _ := os.ReadFile("/proc/mounts")
	var mnt string
	for _, line := range strings.Split(string(mounts), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[2] == "cgroup2" {
			mnt = f[1]
		}
	}
	self, _ := os.ReadFile("/proc/self/cgroup")
	for _, line := range strings.Split(string(self), "\n") {
		if rel, ok := strings.CutPrefix(line, "0::"); ok && mnt != "" {
			return filepath.Join(mnt, rel)
		}
	}
	t.Skip("no cgroup v2")
	return ""
}

// fakeServerDir makes base/name/1 with a sleep inside, as a server leaves
// it, and returns the sleep.
func fakeServerDir(t *testing.T, base, name string) *exec.Cmd {
	t.Helper()
	dir := filepath.Join(base, name)
	if err := os.MkdirAll(filepath.Join(dir, "1"), 0o755); err != nil {
		t.Skipf("no writable cgroup v2 here: %v", err)
	}
	t.Cleanup(func() {
		_ = os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
		for i := 0; i < 100; i++ {
			_ = os.Remove(filepath.Join(dir, "1"))
			if os.Remove(dir) == nil || os.IsNotExist(os.Remove(dir)) {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
	fd, err := unix.Open(filepath.Join(dir, "1"), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
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

// A server in another PID namespace sharing the cgroup tree is alive
// (it holds the flock on its directory) though its pid means nothing
// here: a new server's start-up sweep must leave it alone, and still
// sweep a directory whose owner is dead.
//
// The server runs in a private cgroup, so that the sweeps of servers
// started by other tests on this host cannot touch the fake directories.
func TestSweepSparesForeignLiveServer(t *testing.T) {
	base := filepath.Join(ownCgroupDir(t), "codex-e2e-sweep-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(base, 0o755); err != nil {
		t.Skipf("no writable cgroup v2 here: %v", err)
	}
	t.Cleanup(func() {
		for i := 0; i < 100 && os.Remove(base) != nil; i++ {
			time.Sleep(10 * time.Millisecond)
		}
	})
	// A dead server's pid that no later fork can bring back (above the
	// kernel's largest pid_max): the pid of an exited child can come back
	// while a test of another package sets the host's ns_last_pid.
	name := "codex-exec-" + strconv.Itoa(1<<22+1)
	foreign := fakeServerDir(t, base, name+"-7")
	dead := fakeServerDir(t, base, name+"-8")
	lock, err := unix.Open(filepath.Join(base, name+"-7"), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(lock)
	if err := unix.Flock(lock, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}

	pid := startServerIn(t, base) // sweeps before it prints its URL
	if _, err := os.Stat(filepath.Join(base, "codex-exec-"+strconv.Itoa(pid))); err != nil {
		t.Skipf("the server does not use cgroup mode here: %v", err)
	}
	if _, err := os.Stat(filepath.Join(base, name+"-7")); err != nil {
		t.Errorf("the live foreign server's directory was swept: %v", err)
	}
	if err := foreign.Process.Signal(syscall.Signal(0)); err != nil || isZombie(foreign.Process.Pid) {
		t.Errorf("the live foreign server's process was killed")
	}
	done := make(chan struct{})
	go func() { _ = dead.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Errorf("the dead server's process survived the sweep")
		_ = dead.Process.Kill()
		<-done // before fakeServerDir's cleanup waits for it too
	}
	if _, err := os.Stat(filepath.Join(base, name+"-8")); !os.IsNotExist(err) {
		t.Errorf("the dead server's directory survived the sweep: %v", err)
	}
}

func isZombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'Z'
}

// startServerIn runs `codex exec-server` inside the cgroup dir and returns
// its pid once it printed its URL; it is stopped with SIGTERM at the end of
// the test.
func startServerIn(t *testing.T, dir string) int {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	cmd := exec.Command(binary, "exec-server", "--listen", "ws://127.0.0.1:0", "--log-level", "debug")
	cmd.Env = []string{raceEnv, "PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start into a cgroup: %v", err)
	}
	line := make(chan string, 1)
	go func() {
		b := make([]byte, 256)
		n, _ := stdout.Read(b)
		line <- string(b[:n])
		_, _ = io.Copy(io.Discard, stdout)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Errorf("server exit: %v; stderr:\n%s", err, stderr.String())
		}
	})
	select {
	case l := <-line:
		if !strings.HasPrefix(l, "ws://") {
			t.Fatalf("server printed %q; stderr:\n%s", l, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("server printed no URL; stderr:\n%s", stderr.String())
	}
	return cmd.Process.Pid
}
