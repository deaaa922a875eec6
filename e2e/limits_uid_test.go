package e2e

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// inotifyHold takes inotify instances until the kernel refuses one, says
// how many it holds and why it stopped, and keeps them until stdin closes.
const inotifyHold = `
import ctypes, errno, sys
libc = ctypes.CDLL(None, use_errno=True)
fds = []
while libc.inotify_init1(0) >= 0:
    fds.append(1)
print("held", len(fds), errno.errorcode[ctypes.get_errno()], flush=True)
sys.stdin.read()
`

// inotifyOne takes one inotify instance and says whether it got it.
const inotifyOne = `
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
print("ok" if libc.inotify_init1(0) >= 0 else errno.errorcode[ctypes.get_errno()])
`

// TestSharedUidInotify keeps the limit of docs/sandbox.md §7 true: a
// sandboxed command runs as the server's uid, and the kernel counts
// inotify instances per uid (fs.inotify.max_user_instances), so one
// command can take them all, and every other command of that server and
// every host process of that uid then gets EMFILE until it exits. The
// server runs as a uid of its own that nothing else uses, so the test
// exhausts nobody else's quota.
func TestSharedUidInotify(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the server as another uid")
	}
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3 for the probe")
	}
	b, err := os.ReadFile("/proc/sys/fs/inotify/max_user_instances")
	if err != nil {
		t.Skip(err)
	}
	limit, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	const uid = 61234
	dir := t.TempDir()
	bin, work := filepath.Join(dir, "codex"), filepath.Join(dir, "work")
	data, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{os.Chmod(filepath.Dir(dir), 0o755), os.Chmod(dir, 0o755), os.WriteFile(bin, data, 0o755), os.Mkdir(work, 0o755), os.Chown(work, uid, uid)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	asUID := func(argv ...string) *exec.Cmd {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir, cmd.Env = work, []string{raceEnv, "PATH=/usr/bin:/bin"}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
		return cmd
	}
	sandboxed := func(script string) *exec.Cmd {
		return asUID(bin, "sandbox", "--mode", "workspace-write", "--", "/usr/bin/python3", "-c", script)
	}
	one := func(cmd *exec.Cmd) string {
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v: %v", cmd.Args, err)
		}
		return strings.TrimSpace(string(out))
	}
	holder := sandboxed(inotifyHold)
	stdin, _ := holder.StdinPipe()
	stdout, _ := holder.StdoutPipe()
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	released := false
	release := func() {
		if !released {
			released = true
			stdin.Close()
			_, _ = io.Copy(io.Discard, stdout)
			_ = holder.Wait()
		}
	}
	defer release()
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if want := fmt.Sprintf("held %d EMFILE\n", limit); line != want {
		t.Fatalf("the sandboxed command said %q, want %q", line, want)
	}
	if got := one(sandboxed(inotifyOne)); got != "EMFILE" {
		t.Errorf("another sandboxed command of the same server got %q, want EMFILE", got)
	}
	if got := one(asUID("/usr/bin/python3", "-c", inotifyOne)); got != "EMFILE" {
		t.Errorf("a host process of the server's uid got %q, want EMFILE", got)
	}
	release()
	if got := one(sandboxed(inotifyOne)); got != "ok" {
		t.Errorf("after the holder exited: %q, want ok", got)
	}
}
