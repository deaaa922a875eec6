package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRedteamProtectedLeftoverReadOnly: what a run leaves at a protected
// name is removed by the server after the run (sandbox.HostGuard.Release)
// in the host's view, where the sandbox's read-only binds are not. A
// read-only entry inside a writable root covers one dentry: its folder
// can be renamed. The command renames the folder holding a read-only file
// to the watched .git (a root inside a parent repository) and moves each
// <name>.codex-removed-<hex> its watcher makes back, until it is killed
// (process/terminate): the server's removal then deleted the file the
// sandbox kept read-only. Five runs: a run killed while the watcher had
// the folder aside proves nothing.
func TestRedteamProtectedLeftoverReadOnly(t *testing.T) {
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()
	base, root := rootInParentRepo(t)
	for run := range 5 {
		keep := filepath.Join(root, "a", "keep")
		if err := os.MkdirAll(keep, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(keep, "file"), []byte("read-only\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		moved := filepath.Join(base, fmt.Sprintf("moved%d", run))
		sb := workspaceSandbox(root, "restricted")
		fs := sb["permissions"].(map[string]any)["file_system"].(map[string]any)
		fs["entries"] = append(fs["entries"].([]any),
			map[string]any{"path": map[string]any{"type": "path", "path": "file://" + keep}, "access": "read"},
			map[string]any{"path": map[string]any{"type": "path", "path": "file://" + base}, "access": "write"})
		id := fmt.Sprintf("run%d", run)
		script := fmt.Sprintf(`echo x > a/keep/file 2>/dev/null && echo WROTE-READ-ONLY
mv a .git && touch %s
while :; do for d in .git.codex-removed-*; do mv "$d" .git 2>/dev/null; done; done`, moved)
		c.ok("process/start", sandboxedStart(id, root, sb, false, script), nil)
		deadline := time.Now().Add(10 * time.Second)
		for {
			if _, err := os.Stat(moved); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("run %d: the command never renamed its folder", run)
			}
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(100 * time.Millisecond)
		c.ok("process/terminate", map[string]any{"processId": id}, nil)
		evs := c.events(id, 20*time.Second)
		if len(evs) == 0 || evs[len(evs)-1].Method != "process/closed" {
			t.Fatalf("run %d did not close: %v", run, evs)
		}
		// The release follows the end of the helper: wait for it.
		deadline = time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			if _, err := os.Lstat(filepath.Join(root, ".git")); err != nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if _, err := os.Lstat(filepath.Join(root, ".git")); err == nil {
			t.Fatalf("run %d: the protected name still holds the folder", run)
		}
		found, _ := filepath.Glob(filepath.Join(root, ".git*", "keep", "file"))
		if len(found) != 1 {
			t.Fatalf("run %d: the file the sandbox kept read-only was deleted by the removal of the leftover (found %v)", run, found)
		}
		if b, _ := os.ReadFile(found[0]); string(b) != "read-only\n" {
			t.Fatalf("run %d: the read-only file was written: %q", run, b)
		}
		// Put it back for the next run.
		if err := os.Rename(filepath.Dir(filepath.Dir(found[0])), filepath.Join(root, "a")); err != nil {
			t.Fatal(err)
		}
		os.RemoveAll(keep)
	}
}

// TestRedteamProtectedParentUnsearchable: the watcher sweeps without
// capabilities since review s27, so it sees no more than the command: a
// command that made .git (a root inside a parent repository) and then
// took every permission from the root it owns (chmod 000 .) hid it from
// every sweep (fstatat fails with EACCES, taken for "not there"), and the
// server could not move it aside either; the planted .git/config stayed,
// for the user's next git command there once the folder is usable again.
// With capabilities the watcher had removed it. One process makes both
// changes, well within a poll.
func TestRedteamProtectedParentUnsearchable(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the test reads a folder of mode 000")
	}
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip(err)
	}
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()
	base, root := rootInParentRepo(t)
	t.Cleanup(func() { os.Chmod(root, 0o755); os.RemoveAll(base) })
	out, _, _ := runSandboxed(t, c, sandboxedStart("hide", root, workspaceSandbox(root, "restricted"), false,
		`/usr/bin/python3 -c '
import os
os.mkdir(".git")
open(".git/config", "w").write("[core]\n\tfsmonitor = touch /tmp/pwned\n")
os.chmod(".", 0)
print("HIDDEN")
'; sleep 0.1`))
	if !strings.Contains(out, "HIDDEN") {
		t.Fatalf("the command did not make its .git: %q", out)
	}
	// The watcher itself sees it (its sweep, not only the server's
	// release after the run).
	if !strings.Contains(out, "sandbox blocked creation of protected workspace metadata path "+filepath.Join(root, ".git")) {
		t.Errorf("the helper's watcher did not see the hidden .git: %q", out)
	}
	// The release follows the end of the helper.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Lstat(filepath.Join(root, ".git")); err != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := os.Lstat(filepath.Join(root, ".git", "config")); err == nil {
		t.Errorf("the .git the command hid behind a folder of mode 000 stayed, with its config (%q)", out)
	}
}
