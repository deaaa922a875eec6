package e2e

import (
	"fmt"
	"os"
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
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no python3 for the clone(CLONE_PARENT) command")
	}
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skip("the script knows the clone syscall number of amd64 and arm64 only")
	}
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()
	want := map[string]int{}
	for round := 0; round < 3; round++ {
		for _, sig := range []string{"sigchld", "none"} {
			id := fmt.Sprintf("clone-%s-%d", sig, round)
			c.ok("process/start", startParams(id, "/usr/bin/python3", "-c", cloneParentScript, sig, "20"), nil)
			want[id] = 0
		}
		for i := 0; i < 10; i++ {
			id := fmt.Sprintf("short-%d-%d", round, i)
			code := (round*10 + i) % 7
			c.ok("process/start", startParams(id, "sh", "-c", fmt.Sprintf("exit %d", code)), nil)
			want[id] = code
		}
	}
	for id, code := range want {
		if _, got := checkEvents(t, c.events(id, 20*time.Second)); got != code {
			t.Errorf("%s exited with %d, want %d: an exit status was lost", id, got, code)
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
	if strings.Contains(s.stderr.String(), "no child processes") {
		t.Errorf("a child's status was reaped behind its owner's back:\n%s", s.stderr.String())
	}
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
