package e2e

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const nobodyID = 65534

// requireNobody skips unless the test runs as root and nobody can reach
// files below the temporary directory (a private TMPDIR, mode 0700, hides
// them).
func requireNobody(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("not root: the test runs the server as nobody and a client as root")
	}
	if fi, err := os.Stat(os.TempDir()); err != nil || fi.Mode().Perm()&0o001 == 0 {
		t.Skipf("TMPDIR %s is not searchable by other users (%v): nobody could not reach the test's files", os.TempDir(), err)
	}
}

// nobodyDir returns a new directory owned by nobody, on a path nobody can
// traverse.
func nobodyDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for d := dir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(dir, nobodyID, nobodyID); err != nil {
		t.Fatal(err)
	}
	return dir
}

// nobodyBinary copies the codex binary where nobody can run it (the
// build's own directory is private).
func nobodyBinary(t *testing.T) string {
	t.Helper()
	src, err := os.Open(binary)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	bin := filepath.Join(nobodyDir(t), "codex")
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return bin
}

// asNobody runs a command as uid and gid 65534 with no supplementary
// groups (what `setpriv --reuid 65534 --regid 65534 --clear-groups`
// does), with CODEX_HOME set to home.
func asNobody(home string) func(*exec.Cmd) {
	return func(cmd *exec.Cmd) {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobodyID, Gid: nobodyID, Groups: []uint32{}}}
		cmd.Env = append(cmd.Env, "CODEX_HOME="+home)
	}
}

// Issue 17, item 7: a server run as an unprivileged user cannot read the
// /proc fd tables of another user's processes, so the peer check found no
// owner for a root client's socket and refused it (403 "no process holds
// the local peer socket"). A sandboxed child of that server runs as the
// server's uid, so a peer socket owned by another uid cannot be one of
// its sandboxes'.
//
// Must hold: a root client connects to a server run as nobody (also while
// a sandboxed process is alive); a network-on sandboxed child of that
// server is still refused; an unsandboxed child (same uid) connects.
func TestPeerNonRootServer(t *testing.T) {
	requireNobody(t)
	s := startServerWith(t, nobodyBinary(t), asNobody(nobodyDir(t)))
	c := dial(t, s.URL, nil)
	c.handshake()

	root := nobodyDir(t)
	sb := workspaceSandbox(root, "enabled")
	if r := c.call("process/start", sandboxedStart("probe", root, sb, false, "true")); r.Error != nil {
		t.Skipf("the server cannot sandbox as nobody here (unprivileged user namespaces?): %s", r.Error.Message)
	}
	c.events("probe", 20*time.Second)
	script := upgradeScript(s.URL, "")
	out, _, _ := runSandboxed(t, c, sandboxedStart("connect", root, sb, false, script+"; cat /proc/self/uid_map"))
	if !strings.Contains(out, "STATUS HTTP/1.1 403") {
		t.Errorf("a sandboxed child of the nobody server: got %q, want a 403 status line", out)
	}
	if !s.waitStderr("refused websocket peer", 5*time.Second) {
		t.Error("no log line for the refusal")
	}
	if f := strings.Fields(out[strings.Index(out, "\n")+1:]); len(f) != 3 || f[1] != "65534" {
		t.Errorf("the sandboxed child's uid_map does not map nobody: %q", out)
	}
	p := startParams("plain", "/bin/bash", "--norc", "-c", script)
	if out, _ = c.run("plain", p); !strings.Contains(out, "STATUS HTTP/1.1 101") {
		t.Errorf("an unsandboxed child of the nobody server: got %q, want 101", out)
	}

	var res map[string]string
	c.ok("process/start", sandboxedStart("sleeper", root, sb, false, "sleep 30"), &res)
	c2 := dial(t, s.URL, nil)
	c2.handshake()
	c2.close()
	c.ok("process/terminate", map[string]any{"processId": "sleeper"}, nil)
	c.events("sleeper", 10*time.Second)
}

// Issue 17, item 7: a config.toml the server cannot read (a server run as
// nobody, the file 0600 root) stops the start with one line that names
// the file and says how to fix it, exit status 1 as other configuration
// errors.
func TestConfigUnreadable(t *testing.T) {
	requireNobody(t)
	bin := nobodyBinary(t)
	home := nobodyDir(t)
	if err := os.Chown(home, 0, 0); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(home, "config.toml")
	if err := os.WriteFile(file, []byte("default_permissions = \":read-only\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "exec-server", "--listen", "stdio")
	cmd.Env = []string{raceEnv, "PATH=/usr/bin:/bin"}
	asNobody(home)(cmd)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := -1
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	msg := stderr.String()
	lines := strings.Split(strings.TrimRight(msg, "\n"), "\n")
	if code != 1 || stdout.Len() != 0 || len(lines) != 1 || !strings.Contains(msg, file) ||
		!strings.Contains(msg, "permission denied") || !strings.Contains(msg, "readable by uid 65534") || !strings.Contains(msg, "CODEX_HOME") {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 and one line naming %s, the cause and the fix", code, stdout.String(), msg, file)
	}
}
