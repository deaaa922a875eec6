package sandbox_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/codexec/codex/sandbox"
)

// Deny-glob floods (docs/sandbox.md §3.5): past 8192 masks, folders are
// masked whole, except those the command needs; what those hold directly
// is masked one by one, up to 16384.

// touchN creates n empty files name0.env… in dir.
func touchN(t *testing.T, dir, name string, n int) {
	t.Helper()
	mkdirs(t, dir, ".")
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s%d.env", name, i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// workspaceWithGlob is root read, the project writable, and deny globs.
func workspaceWithGlob(patterns ...string) sandbox.Profile {
	es := []sandbox.Entry{
		sandbox.SpecialEntry(sandbox.SpecialRoot, sandbox.AccessRead),
		sandbox.ProjectRootsEntry("", sandbox.AccessWrite),
	}
	for _, p := range patterns {
		es = append(es, sandbox.GlobDenyEntry(p))
	}
	return sandbox.Managed(sandbox.NetworkRestricted, es...)
}

// TestGlobFoldsTheFolderWithTheMost: over the cap, only the folder that
// brings the count back under it is masked whole.
func TestGlobFoldsTheFolderWithTheMost(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	for i := range 64 {
		touchN(t, filepath.Join(dir, fmt.Sprintf("d%d", i)), "f", 70)
	}
	touchN(t, filepath.Join(dir, "d7"), "g", 4000)
	plan := resolve(t, readOnlyWithGlob("**/*.env"), sandbox.Context{Cwd: dir})
	var whole []string
	for _, p := range plan.DenyMatches {
		if !strings.HasSuffix(p, ".env") {
			whole = append(whole, p)
		}
	}
	if !reflect.DeepEqual(whole, []string{filepath.Join(dir, "d7")}) || len(plan.DenyMatches) != 63*70+1 {
		t.Fatalf("masked whole %v, %d masks; want only d7 and 63*70 files", whole, len(plan.DenyMatches))
	}
}

// TestGlobFloodInTheWorkspace: a flood directly in the writable root is
// masked file by file; the same flood seen from a request anchored
// elsewhere masks the folder whole; a flood in a folder that holds the
// command's working folder is masked file by file too.
func TestGlobFloodInTheWorkspace(t *testing.T) {
	t.Parallel()
	base := tempDir(t)
	work, other := filepath.Join(base, "work"), filepath.Join(base, "other")
	touchN(t, work, "f", 8200)
	writeFile(t, work, "sub/inner/x.env", "")
	mkdirs(t, other, ".")
	plan := resolve(t, workspaceWithGlob("**/*.env"), sandbox.Context{Cwd: work})
	if len(plan.DenyMatches) != 8201 || !slicesContain(plan.DenyMatches, filepath.Join(work, "f8199.env")) {
		t.Fatalf("in the workspace: %d masks, want the 8201 files", len(plan.DenyMatches))
	}
	plan = resolve(t, readOnlyWithGlob(work+"/**/*.env"), sandbox.Context{Cwd: other})
	if !reflect.DeepEqual(plan.DenyMatches, []string{work}) {
		t.Fatalf("from elsewhere: DenyMatches %v, want %s whole", plan.DenyMatches, work)
	}
	touchN(t, filepath.Join(work, "sub"), "g", 8000)
	plan = resolve(t, readOnlyWithGlob(work+"/**/*.env"), sandbox.Context{Cwd: other, CommandCwd: filepath.Join(work, "sub/inner")})
	if len(plan.DenyMatches) != 8200+8000+1 {
		t.Fatalf("above the command's cwd: %d masks, want every file", len(plan.DenyMatches))
	}
}

// TestGlobFoldCountsPins: each folder holding masks inside a writable
// root is pinned, one mount more, so 1500 matches each six folders deep
// in the workspace root (10500 mounts; 8000 twelve deep exceed the
// kernel's 100000) fold into 1500 folder masks.
func TestGlobFoldCountsPins(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	for i := range 1500 {
		writeFile(t, dir, fmt.Sprintf("%d/a/b/c/d/e/x.env", i), "")
	}
	plan := resolve(t, workspaceWithGlob("**/*.env"), sandbox.Context{Cwd: dir})
	pins := map[string]bool{}
	for _, m := range plan.DenyMatches {
		for d := filepath.Dir(m); d != dir; d = filepath.Dir(d) {
			pins[d] = true
		}
	}
	if n := len(plan.DenyMatches) + len(pins); n > 8192 {
		t.Fatalf("%d masks and %d pins", len(plan.DenyMatches), len(pins))
	}
	if !slicesContain(plan.DenyMatches, filepath.Join(dir, "7")) || len(plan.DenyMatches) != 1500 {
		t.Fatalf("7 is not masked whole: %d masks", len(plan.DenyMatches))
	}
}

// TestGlobFloodBeyondTheCeiling: more than 16384 matches directly in the
// working folder cannot be masked: the request fails, naming the folder.
func TestGlobFloodBeyondTheCeiling(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	touchN(t, dir, "f", 16385)
	_, err := sandbox.Resolve(workspaceWithGlob("*.env"), sandbox.Context{Cwd: dir}, sandbox.PurposeProcess)
	if !errors.Is(err, sandbox.ErrPrepare) || !strings.Contains(err.Error(), "more than 16384 files and folders directly in "+dir+", which cannot be masked whole") {
		t.Fatalf("error %v", err)
	}
}

// TestGlobDeepAndLongFolders: a folder deeper than 64 below the search
// root, or whose path is longer than 2048 bytes, is masked whole unread.
func TestGlobDeepAndLongFolders(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	deep := strings.Repeat("d/", 70)
	writeFile(t, dir, "deep/"+deep+"x.env", "")
	long := strings.Repeat(strings.Repeat("l", 200)+"/", 12)
	writeFile(t, dir, "long/"+long+"y.env", "")
	plan := resolve(t, workspaceWithGlob("**/*.env"), sandbox.Context{Cwd: dir})
	want := []string{
		filepath.Join(dir, "deep", strings.Repeat("d/", 63)+"d"),
		filepath.Join(dir, "long", strings.Repeat(strings.Repeat("l", 200)+"/", 9)+strings.Repeat("l", 200)),
	}
	if got := rel(dir, plan.DenyMatches); !reflect.DeepEqual(got, rel(dir, want)) {
		t.Fatalf("masked %v, want %v", got, rel(dir, want))
	}
}

// TestGlobPlantedFolderLink: a glob's folder replaced by a symlink inside
// the workspace is masked itself and not walked; one outside the
// request's roots and folders is followed.
func TestGlobPlantedFolderLink(t *testing.T) {
	t.Parallel()
	base := tempDir(t)
	work, target := filepath.Join(base, "work"), filepath.Join(base, "target")
	writeFile(t, target, "sh", "")
	writeFile(t, target, "k.env", "")
	mkdirs(t, work, ".")
	symlink(t, target, work, "secrets")
	for _, p := range []sandbox.Profile{workspaceWithGlob("secrets/*"), readOnlyWithGlob("secrets/*")} {
		plan := resolve(t, p, sandbox.Context{Cwd: work})
		if len(plan.DenyPaths) != 0 || !reflect.DeepEqual(plan.DenyMatches, []string{filepath.Join(work, "secrets")}) {
			t.Fatalf("DenyPaths %v DenyMatches %v, want only the link", plan.DenyPaths, plan.DenyMatches)
		}
	}
	symlink(t, target, base, "trusted")
	plan := resolve(t, workspaceWithGlob(base+"/trusted/*.env"), sandbox.Context{Cwd: work})
	if !reflect.DeepEqual(plan.DenyMatches, []string{filepath.Join(target, "k.env")}) || len(plan.DenyPaths) != 0 {
		t.Fatalf("DenyPaths %v DenyMatches %v, want the target's match", plan.DenyPaths, plan.DenyMatches)
	}
}

func slicesContain(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
