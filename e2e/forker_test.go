package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fdCheck lists every fd above 2 the shell holds (none is expected), then
// prints "done"; it opens no fd of its own while it looks.
const fdCheck = `for i in $(seq 3 4096); do [ -e /proc/$$/fd/$i ] && echo "fd $i open"; done; echo done`

// With a few hundred live processes the server's fd table is large, and
// starts fork on the forker, a thread with a table of its own (proc's
// forker): pipe, PTY and sandboxed commands must start from it exactly
// as from the server's table, inheriting no fd but 0, 1 and 2.
func TestStartsFromLargeFdTable(t *testing.T) {
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()
	pid := s.cmd.Process.Pid
	for i := range 200 {
		c.ok("process/start", startParams(fmt.Sprintf("s%d", i), "/bin/sleep", "1000"), nil)
	}
	if n := countFDs(t, fmt.Sprintf("/proc/%d/fd", pid)); n < 600 {
		t.Fatalf("the server holds %d fds with 200 live processes; the test needs a large table", n)
	}

	out, code := c.run("pipes", startParams("pipes", "/bin/sh", "-c", fdCheck))
	if code != 0 || out != "done\n" {
		t.Fatalf("pipe command: exit %d, output %q", code, out)
	}
	p := startParams("tty", "/bin/sh", "-c", "tty; "+fdCheck)
	p["tty"] = true
	out, code = c.run("tty", p)
	if code != 0 || !strings.HasPrefix(out, "/dev/pts/") || !strings.HasSuffix(out, "\r\ndone\r\n") {
		t.Fatalf("PTY command: exit %d, output %q", code, out)
	}
	root := t.TempDir()
	out, code, denied := runSandboxed(t, c, sandboxedStart("sb", root, workspaceSandbox(root, "restricted"), false,
		"echo hi > inside.txt && cat inside.txt && "+fdCheck))
	if code != 0 || denied || out != "hi\ndone\n" {
		t.Fatalf("sandboxed command: exit %d, denied %v, output %q", code, denied, out)
	}
	if _, err := os.Stat(filepath.Join(root, "inside.txt")); err != nil {
		t.Fatalf("the sandboxed command's write is missing: %v", err)
	}

	// The forks came from a thread whose table is small.
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	small := 0
	for _, task := range tasks {
		if countFDs(t, fmt.Sprintf("/proc/%d/task/%s/fd", pid, task.Name())) < 16 {
			small++
		}
	}
	if small != 1 {
		t.Fatalf("%d threads of the server have a small fd table, want 1 (the forker)", small)
	}
}

func countFDs(t *testing.T, dir string) int {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}
