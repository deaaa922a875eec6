package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// cloneParentScript makes argv[2] children with clone(CLONE_PARENT), which
// are children of the command's parent (the server), not of the command;
// each exits at once. argv[1] is the exit signal asked for: "sigchld", or
// "none" (the kernel gives such a child its caller's exit signal anyway:
// the server gets a SIGCHLD either way).
const cloneParentScript = `
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
nr = {"x86_64": 56, "aarch64": 220}[os.uname().machine]
sig = 17 if sys.argv[1] == "sigchld" else 0
for i in range(int(sys.argv[2])):
    pid = libc.syscall(nr, 0x00008000 | sig, 0, 0, 0, 0)
    if pid == 0:
        os._exit(0)
    if pid < 0:
        sys.exit("clone: errno %d" % ctypes.get_errno())
print("made", sys.argv[2])
`

// TestCloneParentZombiesReaped: a command's clone(CLONE_PARENT) children
// are the server's own children, which no owner waits for. They used to
// stay zombies for the server's whole life: up to the command's pids limit
// each, so that commands run one after another could fill the host's pid
// table. The server now reaps every child it does not own, without
// taking the exit status of one it does (the short commands' exit codes).
func TestCloneParentZombiesReaped(t *testing.T) {
	needCloneParent(t)
	checkCloneParentReaped(t, startServer(t))
}

// childZombies returns the stat lines of the zombie children of pid.
func childZombies(t *testing.T, pid int) []string {
	t.Helper()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, task := range tasks {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, task.Name()))
		if err != nil {
			continue // the thread ended
		}
		for _, f := range strings.Fields(string(data)) {
			if _, err := strconv.Atoi(f); err != nil {
				continue
			}
			stat, err := os.ReadFile("/proc/" + f + "/stat")
			if err != nil {
				continue
			}
			line := string(stat)
			if i := strings.LastIndexByte(line, ')'); i > 0 && strings.HasPrefix(line[i:], ") Z") {
				out = append(out, strings.TrimSpace(line))
			}
		}
	}
	return out
}

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

// The same in the other ways a server can run: as a subreaper by
// inheritance, without cgroup v2 (proc's subreaper mode), with --init.

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
