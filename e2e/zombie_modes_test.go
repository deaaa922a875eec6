package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// The reaper of unowned children (TestCloneParentZombiesReaped) in the
// other ways a server can run: with --init, without cgroup v2 (proc's
// subreaper mode), and as a subreaper by inheritance.

// checkCloneParentReaped runs commands that give the server children with
// clone(CLONE_PARENT), and commands that leave an orphan, between short
// commands with known exit codes, and checks that no exit code is lost and
// that no zombie child of the server stays.
func checkCloneParentReaped(t *testing.T, s *server) {
	t.Helper()
	c := dial(t, s.URL, nil)
	c.handshake()
	want := map[string]int{}
	for round := 0; round < 2; round++ {
		id := fmt.Sprintf("clone-%d", round)
		c.ok("process/start", startParams(id, "/usr/bin/python3", "-c", cloneParentScript, "sigchld", "20"), nil)
		want[id] = 0
		// An orphan: it comes to the server when the server is a subreaper.
		oid := fmt.Sprintf("orphan-%d", round)
		c.ok("process/start", startParams(oid, "sh", "-c", "(sleep 0.2 &) ; exit 0"), nil)
		want[oid] = 0
		for i := 0; i < 5; i++ {
			id := fmt.Sprintf("short-%d-%d", round, i)
			code := (round*5 + i) % 7
			c.ok("process/start", startParams(id, "sh", "-c", fmt.Sprintf("exit %d", code)), nil)
			want[id] = code
		}
	}
	for id, code := range want {
		out, got := checkEvents(t, c.events(id, 20*time.Second))
		if got != code {
			t.Errorf("%s exited with %d, want %d: an exit status was lost", id, got, code)
		}
		if strings.HasPrefix(id, "clone-") && out != "made 20\n" {
			t.Errorf("%s said %q, want the clones made", id, out)
		}
	}
	pid := s.cmd.Process.Pid
	var zombies []string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		zombies = childZombies(t, pid)
		if len(zombies) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d zombie children of the server 5 s after their commands ended, e.g. %s", len(zombies), zombies[0])
		}
	}
}

// needCloneParent skips where the clone(CLONE_PARENT) script cannot run.
func needCloneParent(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no python3 for the clone(CLONE_PARENT) command")
	}
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skip("the script knows the clone syscall number of amd64 and arm64 only")
	}
}

// TestCloneParentReapedInheritedSubreaper: a server exec'd by a wrapper
// that made itself a child subreaper is one too (the flag survives
// execve), in cgroup mode. Its commands' clone(CLONE_PARENT) children and
// orphans are its children, and must be reaped. (They stayed zombies, 42
// of them, while the reaper of unowned children stood aside for any
// subreaper rather than for proc's subreaper mode only.)
func TestCloneParentReapedInheritedSubreaper(t *testing.T) {
	needCloneParent(t)
	wrapper := filepath.Join(t.TempDir(), "subreaper-exec")
	body := "#!/bin/sh\nexec /usr/bin/python3 -c '\nimport ctypes, os, sys\nctypes.CDLL(None).prctl(36, 1, 0, 0, 0)\nos.execv(sys.argv[1], sys.argv[1:])\n' " + binary + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	s := startServerFrom(t, wrapper)
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", s.cmd.Process.Pid))
	if !strings.HasPrefix(string(status), "codex") {
		t.Fatalf("pid %d is %q, not the server", s.cmd.Process.Pid, status)
	}
	checkCloneParentReaped(t, s)
}

// TestCloneParentReapedNoCgroup2: without cgroup v2 (unmounted in a mount
// namespace of the server's own) proc's TreeKiller is a subreaper and
// reaps them, while the reaper of unowned children stands aside.
func TestCloneParentReapedNoCgroup2(t *testing.T) {
	needCloneParent(t)
	unshare, err := exec.LookPath("unshare")
	if err != nil || os.Geteuid() != 0 {
		t.Skip("needs root and unshare")
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "no-cgroup2.sh")
	if err := os.WriteFile(script, []byte(`bin=$1; shift
awk '$3 == "cgroup2" { print $2 }' /proc/self/mounts | while read -r m; do umount -l "$m" || exit 1; done
exec "$bin" "$@"
`), 0o644); err != nil {
		t.Fatal(err)
	}
	wrapper := filepath.Join(dir, "wrap")
	if err := os.WriteFile(wrapper, []byte("#!/bin/sh\nexec "+unshare+" --mount --propagation private /bin/sh "+script+" "+binary+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := startServerFrom(t, wrapper)
	if !s.waitStderr("subreaper mode", 2*time.Second) {
		t.Fatalf("not in subreaper mode:\n%s", s.stderr.String())
	}
	checkCloneParentReaped(t, s)
}

// TestCloneParentReapedInit: with --init the orphan Reaper reaps them.
func TestCloneParentReapedInit(t *testing.T) {
	needCloneParent(t)
	s := startServer(t, "--init")
	checkCloneParentReaped(t, s)
}
