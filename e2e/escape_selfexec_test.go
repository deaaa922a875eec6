package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// copyBinaryInto copies our binary into dir/codex and returns its path.
func copyBinaryInto(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "codex")
	copyBinary(t, p)
	return p
}

// replaceWithScript renames a shell script over path, as a sandboxed
// command with path in a writable root can. The script writes marker.
func replaceWithScript(t *testing.T, path, marker string) {
	t.Helper()
	tmp := path + ".new"
	script := "#!/bin/sh\necho \"$0 $*\" >> " + marker + "\nexit 0\n"
	if err := os.WriteFile(tmp, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// docs/sandbox.md §4.1: a script renamed over the server's own executable must
// never run as the sandbox helper (or the fs helper): every re-exec uses a
// handle on the running image, not the path.
func TestEscapeReplacedServerBinary(t *testing.T) {
	dir := t.TempDir()
	bin := copyBinaryInto(t, dir)
	marker := filepath.Join(dir, "pwned")
	s := startServerFrom(t, bin)
	c := dial(t, s.URL, nil)
	c.handshake()
	replaceWithScript(t, bin, marker)

	root := t.TempDir()
	sb := workspaceSandbox(root, "restricted")
	outside := filepath.Join(dir, "outside.txt")
	out, code, denied := runSandboxed(t, c, sandboxedStart("p1", root, sb, false, "echo in > in.txt && cat in.txt && echo x > "+outside))
	if _, err := os.Stat(marker); err == nil {
		b, _ := os.ReadFile(marker)
		t.Fatalf("the replaced binary ran: %q", b)
	}
	// stdout and stderr are two pipes read by two readers: their relative
	// order is not part of the protocol, so "in" may follow the error.
	inLine := strings.HasPrefix(out, "in\n") || strings.Contains(out, "\nin\n")
	if code == 0 || !denied || !inLine || !strings.Contains(out, "Read-only file system") {
		t.Fatalf("sandboxed start: code %d denied %v out %q", code, denied, out)
	}
	if _, err := os.Stat(outside); err == nil {
		t.Fatalf("%s was written: the command did not run sandboxed", outside)
	}
	c.ok("fs/writeFile", map[string]any{"path": "file://" + filepath.Join(root, "f.txt"), "dataBase64": "aGkK", "sandbox": sb}, nil)
	c.fail("fs/writeFile", map[string]any{"path": "file://" + outside, "dataBase64": "aGkK", "sandbox": sb}, -32603, "Read-only file system (os error 30)")
	if b, err := os.ReadFile(filepath.Join(root, "f.txt")); err != nil || string(b) != "hi\n" {
		t.Fatalf("sandboxed fs/writeFile: %q %v", b, err)
	}
	if _, err := os.Stat(marker); err == nil {
		b, _ := os.ReadFile(marker)
		t.Fatalf("the replaced binary ran: %q", b)
	}
}

// docs/sandbox.md §4.1, `codex exec run` variant: the command replaces
// the binary, then kills its parent. When exec run supervised an
// exec-server child, that was the child, and the client restarted it: the
// restart must not run the script renamed over the binary. The server now
// runs in the exec run process (there is no restart), so the kill ends the
// run and its watchdog, started before the command, cleans up; still
// nothing may run the replaced binary. unifiedexec.Supervise, which
// restarts, runs the image it was given (/proc/self/exe for a codex that
// supervises its own child; docs/client.md §3.1).
func TestEscapeReplacedBinaryExecRunRestart(t *testing.T) {
	dir := t.TempDir()
	bin := copyBinaryInto(t, dir)
	marker := filepath.Join(dir, "pwned")
	script := filepath.Join(dir, "script")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"$0 $*\" >> "+marker+"\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The command replaces the binary, then kills its exec-server (its
	// parent), so that the client restarts it.
	cmd := exec.Command(bin, "exec", "run", "--", "/bin/sh", "-c", "mv "+script+" "+bin+" && kill -9 $PPID")
	cmd.Env = []string{raceEnv, "PATH=/usr/bin:/bin", "HOME=" + os.Getenv("HOME")}
	out, _ := cmd.CombinedOutput()
	if b, err := os.ReadFile(marker); err == nil {
		t.Fatalf("the replaced binary ran as the exec-server: %q (output %q)", b, out)
	}
}
