//go:build linux

package sandbox_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codexec/codex/sandbox"
)

// TestChildRootSwappedAfterResolution: a root replaced after the plan was
// made (by a symlink, or by another directory) is refused by the helper,
// and nothing is written through it.
func TestChildRootSwappedAfterResolution(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	for _, kind := range []string{"symlink", "directory", "carve-out symlink"} {
		t.Run(kind, func(t *testing.T) {
			base, victim := testDir(t), testDir(t)
			root := filepath.Join(base, "proj")
			if err := os.MkdirAll(root+"/.git", 0o755); err != nil {
				t.Fatal(err)
			}
			p := workspacePlan(root, false, shArgv("echo pwned > pwned; echo pwned > .git/pwned")...)
			p.RecordIdentities()
			switch kind {
			case "symlink":
				mustRename(t, root, root+".old")
				mustSymlink(t, victim, root)
			case "directory":
				mustRename(t, root, root+".old")
				if err := os.Mkdir(root, 0o755); err != nil {
					t.Fatal(err)
				}
				mustSymlink(t, victim, root+"/.git") // whatever is inside
			case "carve-out symlink":
				mustRename(t, root+"/.git", root+"/git.old")
				mustSymlink(t, victim, root+"/.git")
			}
			r := runPlan(t, p)
			if r.code != 1 || !strings.Contains(r.stderr, "cannot enforce sandbox") {
				t.Fatalf("swapped %s: %v", kind, r)
			}
			if _, err := os.Lstat(victim + "/pwned"); err == nil {
				t.Fatalf("the victim was written")
			}
		})
	}
}

// TestChildPlaceholders: a placeholder with a mountpoint is shadowed (EROFS,
// nothing reaches the host); one without is watched, and the helper says
// so.
func TestChildPlaceholders(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	root := testDir(t)
	if err := os.Mkdir(root+"/.codex", 0o555); err != nil {
		t.Fatal(err)
	}
	p := workspacePlan(root, false, shArgv("touch .codex/config.toml; mkdir .agents && echo made")...)
	p.ProtectedCreate = []string{root + "/.agents", root + "/.codex"}
	p.Placeholders = p.ProtectedCreate
	r := runPlan(t, p)
	mustContain(t, r, "Read-only file system", "no read-only placeholder on "+root+"/.agents", "sandbox blocked creation of protected workspace metadata path "+root+"/.agents")
	if r.code != 1 {
		t.Errorf("exit %d, want 1", r.code)
	}
	for _, name := range []string{".codex/config.toml", ".agents"} {
		if _, err := os.Lstat(filepath.Join(root, name)); err == nil {
			t.Errorf("%s reached the host", name)
		}
	}
	// A placeholder that is a symlink by now refuses the run.
	if err := os.Remove(root + "/.codex"); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, testDir(t), root+"/.codex")
	if r := runPlan(t, p); r.code != 1 || !strings.Contains(r.stderr, "cannot enforce sandbox protected path") {
		t.Fatalf("symlinked placeholder: %v", r)
	}
}

func mustRename(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// TestChildFileRoot: a writable root that is a file is bound from its
// handle too.
func TestChildFileRoot(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	root := testDir(t)
	file := testDir(t) + "/notes.txt"
	if err := os.WriteFile(file, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := workspacePlan(root, false, shArgv("echo new > "+file)...)
	p.WritableRoots = append(p.WritableRoots, sandbox.WritableRoot{Path: file})
	p.Landlock.WriteDirs = append(p.Landlock.WriteDirs, file)
	if r := runPlan(t, p); r.code != 0 {
		t.Fatalf("%v", r)
	}
	if got := hostFile(t, file); got != "new\n" {
		t.Errorf("host file is %q", got)
	}
}
