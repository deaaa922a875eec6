package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRedteamProtectedSweepPrivilege: a missing .git below a root inside a
// parent repository is watched, not shadowed, and whatever a run left
// there is removed by the server after the run (sandbox.HostGuard.Release)
// with the server's rights. A command, uid 0 without capabilities, cannot
// delete a file of another user in a folder it may not write; it renames
// that folder to .git (a rename in the same parent needs only the root's
// write bit) and lets the server's sweep delete the file for it. The
// server must not do more in its sweep than the command could have.
func TestRedteamProtectedSweepPrivilege(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the victim file belongs to another user")
	}
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()
	base, root := rootInParentRepo(t)
	data := filepath.Join(root, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	keep := filepath.Join(data, "keep")
	if err := os.WriteFile(keep, []byte("another user's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{keep, data} {
		if err := os.Chown(p, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { os.RemoveAll(base) })

	// The control: the command cannot delete the file itself.
	out, _, _ := runSandboxed(t, c, sandboxedStart("control", root, workspaceSandbox(root, "restricted"), false,
		"rm -f data/keep 2>&1; test -e data/keep && echo STILL-THERE"))
	if !strings.Contains(out, "STILL-THERE") {
		t.Fatalf("control: the command deleted another user's file itself: %q", out)
	}
	out, _, _ = runSandboxed(t, c, sandboxedStart("sweep", root, workspaceSandbox(root, "restricted"), false,
		"mv data .git && echo MOVED; sleep 0.2"))
	if !strings.Contains(out, "MOVED") {
		t.Fatalf("the rename failed: %q", out)
	}
	if _, err := os.Lstat(filepath.Join(root, ".git")); err == nil {
		t.Errorf("the protected name still holds what the command put there (%q)", out)
	}
	aside, _ := filepath.Glob(filepath.Join(root, ".git.codex-removed-*", "keep"))
	if len(aside) != 1 {
		t.Errorf("the sweep deleted a file the command could not delete (moved aside: %v; %q)", aside, out)
	}

	// What the command made read-only itself is not left at the name
	// either, though a sweep without capabilities cannot remove it.
	out, _, _ = runSandboxed(t, c, sandboxedStart("readonly", root, workspaceSandbox(root, "restricted"), false,
		`for i in $(seq 200); do mkdir -p .git/hooks 2>/dev/null && echo x > .git/hooks/post-checkout 2>/dev/null && chmod 555 .git/hooks .git 2>/dev/null && echo MADE && break; done; sleep 0.2`))
	if !strings.Contains(out, "MADE") {
		t.Fatalf("the command never made its read-only .git: %q", out)
	}
	if _, err := os.Lstat(filepath.Join(root, ".git")); err == nil {
		t.Errorf("a read-only .git the command made stayed (%q)", out)
	}
}

// rootInParentRepo makes base/parent, a git repository, and its folder
// base/parent/sub, a writable root whose .git the sandbox watches rather
// than shadows (a root inside a parent repository).
func rootInParentRepo(t *testing.T) (base, root string) {
	t.Helper()
	base = t.TempDir()
	parent := filepath.Join(base, "parent")
	root = filepath.Join(parent, "sub")
	if err := os.MkdirAll(filepath.Join(parent, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(parent, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	return base, root
}
