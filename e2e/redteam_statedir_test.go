package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// Review of issue 18's --state-dir records (docs/operations.md §5): a
// record is an instruction to the next server ("remove this folder"), so
// no one but the server may be able to write one.

// victimGit makes, outside /tmp (so outside every writable root of the
// sandboxes below), a folder holding an empty read-only .git, the kind a
// record may name; it returns the folder.
func victimGit(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "codex-e2e-victim-")
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() {
		_ = os.Chmod(filepath.Join(dir, ".git"), 0o755)
		_ = os.RemoveAll(dir)
	})
	mustDo(t, os.Mkdir(filepath.Join(dir, ".git"), 0o555))
	return dir
}

// forgedRecord is a record line naming dir/.git, as the server writes it.
func forgedRecord(t *testing.T, dir string) string {
	t.Helper()
	var p, g syscall.Stat_t
	mustDo(t, syscall.Stat(dir, &p), syscall.Stat(filepath.Join(dir, ".git"), &g))
	return fmt.Sprintf("+ 1 %d %d %d %d %q %q\n", p.Dev, p.Ino, g.Dev, g.Ino, ".git", dir)
}

// The sandboxed command of a workspace-write run (its writable roots
// include /tmp, as Codex's workspace-write does) forges a record in the
// state directory, which for a server not run as root without
// $XDG_RUNTIME_DIR is codex-exec-UID in /tmp: the next server must not
// remove, on its word, a folder the sandbox could not remove itself.
func TestStateDirRecordForgedBySandbox(t *testing.T) {
	_, cgfd := privateCgroup(t)
	state := filepath.Join(t.TempDir(), "codex-exec-0")
	s := startServerIsolated(t, cgfd, state)
	c := dial(t, s.URL, nil)
	defer c.close()
	c.handshake()
	victim := victimGit(t)
	root := t.TempDir()
	sb := workspaceSandbox(root, "restricted")
	fs := sb["permissions"].(map[string]any)["file_system"].(map[string]any)
	fs["entries"] = append(fs["entries"].([]any), map[string]any{"path": map[string]any{"type": "special", "value": map[string]any{"kind": "slash_tmp"}}, "access": "write"})
	script := fmt.Sprintf(`V=%s; S=%s
rmdir "$V/.git" 2>/dev/null && echo escaped-rmdir
printf '+ 1 %%s %%s %%s %%s ".git" "%%s"\n' $(stat -c '%%d %%i' "$V") $(stat -c '%%d %%i' "$V/.git") "$V" > "$S/watchdog-forged.rec" && echo forged`, victim, state)
	out, code, _ := runSandboxed(t, c, sandboxedStart("forge", root, sb, false, script))
	if strings.Contains(out, "escaped-rmdir") {
		t.Fatalf("the sandbox removed %s/.git itself", victim)
	}
	t.Logf("sandboxed command: exit %d, %q", code, out)
	// The same through command/exec with the legacy workspaceWrite policy
	// (/tmp writable by default).
	r := c.call("command/exec", map[string]any{"command": []string{"/bin/sh", "-c", strings.Replace(script, "watchdog-forged", "watchdog-forged2", 1)},
		"cwd": root, "sandboxPolicy": map[string]any{"type": "workspaceWrite"}})
	t.Logf("command/exec under workspaceWrite: %s %v", r.Result, r.Error)
	startServerIsolated(t, cgfd, state)
	if _, err := os.Lstat(filepath.Join(victim, ".git")); err != nil {
		t.Errorf("the next server removed %s/.git, outside the sandbox's writable roots, on a record the sandboxed command forged: %v", victim, err)
	}
}

// A state directory that is not the server's own (a symlink, or a folder
// of another user, who made codex-exec-UID in /tmp first) holds records
// someone else wrote: the server must not act on them.
func TestStateDirNotOursNotSwept(t *testing.T) {
	for _, kind := range []string{"symlink", "another user's folder", "world-writable folder"} {
		t.Run(kind, func(t *testing.T) {
			_, cgfd := privateCgroup(t)
			base := t.TempDir()
			real := filepath.Join(base, "real")
			mustDo(t, os.Mkdir(real, 0o700))
			state := real
			switch kind {
			case "symlink":
				state = filepath.Join(base, "codex-exec-0")
				mustDo(t, os.Symlink(real, state))
			case "another user's folder":
				mustDo(t, os.Chown(real, 65534, 65534))
			default:
				mustDo(t, os.Chmod(real, 0o777))
			}
			victim := victimGit(t)
			mustDo(t, os.WriteFile(filepath.Join(real, "watchdog-forged.rec"), []byte(forgedRecord(t, victim)), 0o600))
			s := startServerIsolated(t, cgfd, state)
			if _, err := os.Lstat(filepath.Join(victim, ".git")); err != nil {
				t.Errorf("the server removed %s/.git on a record in a state directory not its own (%s): %v", victim, kind, err)
			}
			if strings.Contains(s.stderr.String(), "removed the placeholders of dead servers") {
				t.Errorf("the server swept a state directory not its own: %s", s.stderr.String())
			}
		})
	}
}

// A huge record (a sparse file: no space taken) must not be read whole
// into the next server's memory at start-up.
func TestStateDirHugeRecord(t *testing.T) {
	_, cgfd := privateCgroup(t)
	state := filepath.Join(t.TempDir(), "state")
	mustDo(t, os.Mkdir(state, 0o700))
	f, err := os.Create(filepath.Join(state, "watchdog-huge.rec"))
	if err != nil {
		t.Fatal(err)
	}
	mustDo(t, f.Truncate(256<<20), f.Close())
	s := startServerIsolated(t, cgfd, state)
	st, _ := os.ReadFile("/proc/" + strconv.Itoa(s.cmd.Process.Pid) + "/status")
	for _, l := range strings.Split(string(st), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.Atoi(f[1])
			t.Logf("server peak RSS after start: %d kB", kb)
			if kb > 128<<10 {
				t.Errorf("a 256 MiB record took the starting server to %d kB of memory", kb)
			}
		}
	}
}
