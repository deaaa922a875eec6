package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A server killed with SIGKILL together with its watchdog (which would
// otherwise do it at once: TestKill9NoSurvivors) cannot remove its cgroup
// directory or kill its children; the next server does both.
func TestStaleCgroupSwept(t *testing.T) {
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()
	pid := startEscapee(t, c, "orphan")
	var dir string
	for _, line := range strings.Split(s.stderr.String(), "\n") {
		if i := strings.Index(line, `"dir": "`); i >= 0 && strings.Contains(line, "cgroup mode") {
			dir = strings.TrimSuffix(line[i+len(`"dir": "`):], `"}`)
		}
	}
	if dir == "" {
		t.Skip("the server does not use cgroup mode here: " + s.stderr.String())
	}
	if !strings.HasSuffix(dir, "codex-exec-"+strconv.Itoa(s.cmd.Process.Pid)) {
		t.Fatalf("cgroup dir %q", dir)
	}
	if wd := watchdogOf(s.cmd.Process.Pid); wd > 0 {
		_ = syscall.Kill(wd, syscall.SIGKILL)
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the killed server's cgroup dir is already gone: %v", err)
	}
	startServer(t)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Stat(dir); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			entries, _ := os.ReadDir(filepath.Dir(dir))
			t.Fatalf("stale cgroup dir %s survives the next server (%d entries)", dir, len(entries))
		}
		time.Sleep(20 * time.Millisecond)
	}
	waitGone(t, pid)
}
