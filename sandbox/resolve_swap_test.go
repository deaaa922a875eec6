package sandbox_test

import (
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/codexec/codex/sandbox"
)

// TestRootThroughWritableSymlinkRefused is the symlink case of docs/sandbox.md §3.4 at the
// resolution level: a workspace whose path crosses a symlink inside
// another writable root is refused before anything is remapped, whether it
// is a writable root or only the cwd.
func TestRootThroughWritableSymlinkRefused(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	mkdirs(t, dir, "outer/p", "victim")
	symlink(t, filepath.Join(dir, "victim"), dir, "outer/p/proj")
	proj := filepath.Join(dir, "outer/p/proj")
	outer := sandbox.PathEntry(filepath.Join(dir, "outer"), sandbox.AccessWrite)
	root := sandbox.SpecialEntry(sandbox.SpecialRoot, sandbox.AccessRead)
	for name, p := range map[string]sandbox.Profile{
		"root":     sandbox.Managed(sandbox.NetworkRestricted, root, outer, sandbox.ProjectRootsEntry("", sandbox.AccessWrite)),
		"cwd only": sandbox.Managed(sandbox.NetworkRestricted, root, outer),
	} {
		_, err := sandbox.Resolve(p, sandbox.Context{Cwd: proj}, sandbox.PurposeProcess)
		var se *sandbox.SymlinkCrossingError
		want := "cannot enforce sandbox read-only path " + proj + " because it crosses writable symlink " + proj
		if !errors.As(err, &se) || se.Deny || err.Error() != want {
			t.Errorf("%s: error %v, want %q", name, err, want)
		}
	}
	// A symlinked workspace outside every other writable root binds at
	// its target.
	plan := resolve(t, workspace(), sandbox.Context{Cwd: proj})
	if len(plan.WritableRoots) != 1 || plan.WritableRoots[0].Path != filepath.Join(dir, "victim") {
		t.Fatalf("writable roots %+v", plan.WritableRoots)
	}
}

// TestPlaceholdersAndIdentities: missing metadata right below a root gets
// a placeholder (except .git inside a parent repository), and every root
// and carve-out has its identity recorded.
func TestPlaceholdersAndIdentities(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	writeFile(t, dir, ".git/HEAD", "ref: refs/heads/main\n")
	mkdirs(t, dir, "sub", "other/.agents")
	sub, other := filepath.Join(dir, "sub"), filepath.Join(dir, "other")
	p := sandbox.Managed(sandbox.NetworkRestricted,
		sandbox.SpecialEntry(sandbox.SpecialRoot, sandbox.AccessRead),
		sandbox.ProjectRootsEntry("", sandbox.AccessWrite),
		sandbox.PathEntry(other, sandbox.AccessWrite),
	)
	plan := resolve(t, p, sandbox.Context{Cwd: sub})
	// Both roots sit inside dir's repository: their .git stays watched.
	// .codex only below the cwd's root.
	want := []string{sub + "/.agents", sub + "/.codex"}
	if !reflect.DeepEqual(plan.Placeholders, want) {
		t.Errorf("Placeholders %v, want %v", plan.Placeholders, want)
	}
	for _, ph := range plan.Placeholders {
		if !slices.Contains(plan.ProtectedCreate, ph) {
			t.Errorf("placeholder %s is not in ProtectedCreate %v", ph, plan.ProtectedCreate)
		}
	}
	if !slices.Contains(plan.ProtectedCreate, sub+"/.git") || slices.Contains(plan.Placeholders, sub+"/.git") {
		t.Errorf("sub/.git inside the parent repository must be watched, not shadowed: %v", plan.Placeholders)
	}
	for _, path := range []string{sub, other, other + "/.agents"} {
		if id, ok := plan.Identities[path]; !ok || id.IsZero() {
			t.Errorf("no identity for %s: %v", path, plan.Identities)
		}
	}
	// Outside a repository a missing .git is shadowed too.
	dir2 := tempDir(t)
	plan = resolve(t, workspace(), sandbox.Context{Cwd: dir2})
	if got, want := under(dir2, plan.Placeholders), []string{dir2 + "/.agents", dir2 + "/.codex", dir2 + "/.git"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Placeholders %v, want %v", got, want)
	}
}
