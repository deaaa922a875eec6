package e2e

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Placeholders shared across processes (docs/sandbox.md §4.3 step 5): two
// independent processes on one host, each sandboxing a run in the same
// writable root, must neither fail each other's runs nor unshadow each
// other's protected names.

// cliRun is a `codex sandbox` process kept running: it prints "ready" and
// waits for a line on stdin.
type cliRun struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *lockedBuffer
	done  chan struct{}
}

// startCLIWaiting starts `codex sandbox --mode workspace-write` in dir with
// a command that prints "ready", waits for a line, then runs script.
func startCLIWaiting(t *testing.T, dir, script string) *cliRun {
	t.Helper()
	cmd := exec.Command(binary, "sandbox", "--mode", "workspace-write", "--",
		"/bin/bash", "--norc", "-c", "echo ready; read -r _; "+script)
	cmd.Dir = dir
	cmd.Env = []string{raceEnv, "PATH=/usr/bin:/bin"}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	r := &cliRun{cmd: cmd, stdin: stdin, out: &lockedBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = pw, r.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	go func() {
		defer close(r.done)
		sc := bufio.NewScanner(pr)
		signalled := false
		for sc.Scan() {
			if !signalled && sc.Text() == "ready" {
				close(ready)
				signalled = true
				continue
			}
			r.out.Write([]byte(sc.Text() + "\n"))
		}
	}()
	go func() {
		_ = cmd.Wait()
		pw.Close()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-r.done
	})
	select {
	case <-ready:
	case <-time.After(20 * time.Second):
		t.Fatalf("codex sandbox never got ready: %s", r.out.String())
	}
	return r
}

// finish lets the command go on and returns its output and exit code.
func (r *cliRun) finish(t *testing.T) (string, int) {
	t.Helper()
	_, _ = r.stdin.Write([]byte("go\n"))
	r.stdin.Close()
	select {
	case <-r.done:
	case <-time.After(20 * time.Second):
		t.Fatal("codex sandbox did not end")
	}
	return r.out.String(), r.cmd.ProcessState.ExitCode()
}

// mkdirProbe tries to create something at each protected name (the
// placeholder, an empty directory, is there); each must fail with EROFS.
const mkdirProbe = `for n in .git .agents .codex; do mkdir -p $n/x 2>&1 && echo "MADE $n"; done; echo end`

// checkProbe fails unless the probe was refused three times, with nothing
// left behind in root.
func checkProbe(t *testing.T, who, out string, code int, root string) {
	t.Helper()
	if code != 0 || strings.Contains(out, "MADE") || strings.Count(out, "Read-only file system") != 3 {
		t.Errorf("%s: exit %d, out %q: want exit 0 and three EROFS", who, code, out)
	}
	for _, n := range []string{".git", ".agents", ".codex"} {
		if _, err := os.Lstat(filepath.Join(root, n)); err == nil {
			t.Errorf("%s is left after the runs", n)
		}
	}
}

// A `codex sandbox` run that started first (the names were missing then)
// must neither delete the placeholders a server makes later for its run in
// the same root (the run of codex sandbox failed: "sandbox blocked
// creation of protected workspace metadata path") nor thereby unshadow
// them for the server's command (rmdir on the host detaches the
// placeholder mount in the server's sandbox).
func TestPlaceholderCLIWatcherVersusServer(t *testing.T) {
	root := t.TempDir()
	cli := startCLIWaiting(t, root, "echo cli-done")
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()
	out, code, _ := runSandboxed(t, c, sandboxedStart("probe", root, clientSandbox(root), false, "sleep 0.2; "+mkdirProbe))
	cout, ccode := cli.finish(t)
	if ccode != 0 || strings.Contains(cout, "blocked creation") {
		t.Errorf("codex sandbox: exit %d, out %q: another run's placeholder is not a creation of ours", ccode, cout)
	}
	checkProbe(t, "server run", out, code, root)
}

// A `codex sandbox` run started while a server's run holds the
// placeholders shares them: its end must not unshadow them for the
// server's command, and its own command gets EROFS as well.
func TestPlaceholderServerVersusCLI(t *testing.T) {
	root := t.TempDir()
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()
	p := sandboxedStart("long", root, clientSandbox(root), false, "echo ready; read -r _; "+mkdirProbe)
	p["pipeStdin"] = true
	c.ok("process/start", p, nil)
	waitOutput(t, c, "long", "ready")
	out, code := sandboxCLI(t, root, "--mode", "workspace-write", "--", "/bin/bash", "--norc", "-c", mkdirProbe)
	if code != 0 || strings.Contains(out, "MADE") || strings.Count(out, "Read-only file system") != 3 {
		t.Errorf("codex sandbox: exit %d, out %q: want three EROFS", code, out)
	}
	c.ok("process/write", map[string]any{"processId": "long", "chunk": "Z28K"}, nil)
	lout, lcode := checkEvents(t, c.events("long", 20*time.Second))
	checkProbe(t, "server run", strings.TrimPrefix(lout, "ready\n"), lcode, root)
}

// Two servers sandboxing in one root: the second saw the first one's
// placeholder as an existing directory; when the first run ends and its
// server removes the placeholder, the second run's command must still get
// EROFS.
func TestPlaceholderTwoServersDetach(t *testing.T) {
	root := t.TempDir()
	var cs [2]*client
	for i := range cs {
		s := startServer(t)
		cs[i] = dial(t, s.URL, nil)
		cs[i].handshake()
	}
	sb := clientSandbox(root)
	first := sandboxedStart("first", root, sb, false, "echo ready; read -r _; echo first-done")
	first["pipeStdin"] = true
	cs[0].ok("process/start", first, nil)
	waitOutput(t, cs[0], "first", "ready")
	second := sandboxedStart("second", root, sb, false, "echo ready; read -r _; "+mkdirProbe)
	second["pipeStdin"] = true
	cs[1].ok("process/start", second, nil)
	waitOutput(t, cs[1], "second", "ready")

	cs[0].ok("process/write", map[string]any{"processId": "first", "chunk": "Z28K"}, nil)
	if _, code := checkEvents(t, cs[0].events("first", 20*time.Second)); code != 0 {
		t.Fatalf("first run: exit %d", code)
	}
	if _, err := os.Lstat(filepath.Join(root, ".git")); err != nil {
		t.Errorf("the placeholder of the running process is gone after another server's run ended: %v", err)
	}
	cs[1].ok("process/write", map[string]any{"processId": "second", "chunk": "Z28K"}, nil)
	out, code := checkEvents(t, cs[1].events("second", 20*time.Second))
	checkProbe(t, "second run", strings.TrimPrefix(out, "ready\n"), code, root)
}

// The placeholders must not give a hostile command a way to keep a name it
// creates where the name is watched (a missing .git inside a parent
// repository): an empty 555 directory the command holds a shared flock on
// is still removed and the run fails.
func TestPlaceholderRuleNotForgeable(t *testing.T) {
	parent := t.TempDir()
	if err := os.MkdirAll(filepath.Join(parent, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(parent, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(parent, "sub")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()
	script := `mkdir -m 555 .git || exit 7
/usr/bin/python3 -c 'import fcntl, os, time
fd = os.open(".git", os.O_RDONLY | os.O_DIRECTORY)
fcntl.flock(fd, fcntl.LOCK_SH)
print("locked", flush=True)
time.sleep(0.5)' &
sleep 0.7; wait; echo end`
	out, code, _ := runSandboxed(t, c, sandboxedStart("hostile", root, workspaceSandbox(root, "restricted"), false, script))
	if code == 0 || !strings.Contains(out, "blocked creation") {
		t.Errorf("exit %d, out %q: the created .git must be reported and fail the run", code, out)
	}
	if _, err := os.Lstat(filepath.Join(root, ".git")); err == nil {
		t.Error(".git created by the command is left after the run")
	}
}
