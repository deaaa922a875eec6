package sandbox_test

import (
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/codexec/codex/sandbox"
)

// workspace is the workspace-write profile with tmp excluded.
func workspace() sandbox.Profile { return sandbox.WorkspaceWrite(nil, false, true, true) }

// under keeps the paths inside dir (the client profile also makes /tmp a
// writable root, with its own protected metadata).
func under(dir string, paths []string) []string {
	var out []string
	for _, p := range paths {
		if strings.HasPrefix(p, dir+"/") {
			out = append(out, p)
		}
	}
	return out
}

// rootOf returns the plan's writable root at path.
func rootOf(t *testing.T, plan sandbox.Plan, path string) sandbox.WritableRoot {
	t.Helper()
	for _, w := range plan.WritableRoots {
		if w.Path == path {
			return w
		}
	}
	t.Fatalf("no writable root %s in %+v", path, plan.WritableRoots)
	return sandbox.WritableRoot{}
}

func TestProtectedMetadataExisting(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	writeFile(t, dir, ".git/config", "x")
	writeFile(t, dir, ".codex/config.toml", "x")
	writeFile(t, dir, ".aws/config", "x")
	// The client's own profile (with its .aws entry) and ours.
	for name, p := range map[string]sandbox.Profile{"client": clientProfile(), "constructor": workspace()} {
		ctx := sandbox.Context{Cwd: dir, TmpDir: ""}
		plan := resolve(t, p, ctx)
		ro := rootOf(t, plan, dir).ReadOnly
		want := []string{filepath.Join(dir, ".codex"), filepath.Join(dir, ".git")}
		if name == "client" {
			want = []string{filepath.Join(dir, ".aws"), filepath.Join(dir, ".codex"), filepath.Join(dir, ".git")}
		}
		if !reflect.DeepEqual(ro, want) {
			t.Errorf("%s: ReadOnly %v, want %v", name, ro, want)
		}
		if !reflect.DeepEqual(under(dir, plan.ProtectedCreate), []string{filepath.Join(dir, ".agents")}) {
			t.Errorf("%s: ProtectedCreate %v", name, plan.ProtectedCreate)
		}
		for _, p := range []string{".git/config", ".codex/config.toml", ".codex/new", ".agents/x"} {
			if plan.CanWrite(filepath.Join(dir, p)) {
				t.Errorf("%s: %s writable", name, p)
			}
		}
		if !plan.CanWrite(filepath.Join(dir, "sibling.txt")) {
			t.Errorf("%s: sibling not writable", name)
		}
		if got := plan.CanWrite(filepath.Join(dir, ".aws/config")); got != (name != "client") {
			t.Errorf("%s: .aws/config writable = %v", name, got)
		}
	}
}

func TestMissingAutomaticEntriesAreSkipped(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	plan := resolve(t, clientProfile(), sandbox.Context{Cwd: dir})
	// .aws is missing and "skip": nothing is watched for it; the metadata
	// names are watched whatever the entries say.
	want := []string{filepath.Join(dir, ".agents"), filepath.Join(dir, ".codex"), filepath.Join(dir, ".git")}
	if !reflect.DeepEqual(under(dir, plan.ProtectedCreate), want) {
		t.Fatalf("ProtectedCreate %v, want %v", plan.ProtectedCreate, want)
	}
	if ro := rootOf(t, plan, dir).ReadOnly; len(ro) != 0 {
		t.Fatalf("ReadOnly %v lists missing paths", ro)
	}
}

func TestCodexAlwaysProtectedForCwdRootOnly(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	mkdirs(t, dir, "cwd", "other")
	p := sandbox.Managed(sandbox.NetworkRestricted,
		sandbox.SpecialEntry(sandbox.SpecialRoot, sandbox.AccessRead),
		sandbox.ProjectRootsEntry("", sandbox.AccessWrite),
		sandbox.PathEntry(filepath.Join(dir, "other"), sandbox.AccessWrite),
		sandbox.PathEntry(filepath.Join(dir, "other", ".codex"), sandbox.AccessWrite),
	)
	plan := resolve(t, p, sandbox.Context{Cwd: filepath.Join(dir, "cwd")})
	if !slices.Contains(plan.ProtectedCreate, filepath.Join(dir, "cwd", ".codex")) {
		t.Errorf("missing cwd/.codex not protected: %v", plan.ProtectedCreate)
	}
	// An explicit write entry lifts the protection of other/.codex.
	if slices.Contains(plan.ProtectedCreate, filepath.Join(dir, "other", ".codex")) {
		t.Errorf("explicitly writable other/.codex protected: %v", plan.ProtectedCreate)
	}
	if !slices.Contains(plan.ProtectedCreate, filepath.Join(dir, "other", ".git")) {
		t.Errorf("other/.git not protected: %v", plan.ProtectedCreate)
	}
}

func TestExplicitMetadataWriteLiftsProtection(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	writeFile(t, dir, ".git/config", "x")
	mkdirs(t, dir, ".git/hooks")
	p := sandbox.Managed(sandbox.NetworkRestricted,
		sandbox.SpecialEntry(sandbox.SpecialRoot, sandbox.AccessRead),
		sandbox.ProjectRootsEntry("", sandbox.AccessWrite),
		sandbox.ProjectRootsEntry(".git/hooks", sandbox.AccessWrite),
	)
	plan := resolve(t, p, sandbox.Context{Cwd: dir})
	if !plan.CanWrite(filepath.Join(dir, ".git/hooks/pre-commit")) {
		t.Errorf(".git/hooks not writable: %+v", plan)
	}
	if plan.CanWrite(filepath.Join(dir, ".git/config")) {
		t.Errorf(".git/config writable: %+v", plan)
	}
}

func TestGitPointerFile(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	mkdirs(t, dir, "main/.git/worktrees/wt", "wt")
	writeFile(t, dir, "wt/.git", "gitdir: ../main/.git/worktrees/wt\n")
	p := sandbox.Managed(sandbox.NetworkRestricted,
		sandbox.SpecialEntry(sandbox.SpecialRoot, sandbox.AccessRead),
		sandbox.ProjectRootsEntry("", sandbox.AccessWrite),
		sandbox.PathEntry(filepath.Join(dir, "main"), sandbox.AccessWrite),
	)
	plan := resolve(t, p, sandbox.Context{Cwd: filepath.Join(dir, "wt")})
	if ro := rootOf(t, plan, filepath.Join(dir, "wt")).ReadOnly; !slices.Contains(ro, filepath.Join(dir, "wt/.git")) {
		t.Errorf("wt ReadOnly %v lacks the .git file", ro)
	}
	// The gitdir lies in the other writable root, which carries it.
	if ro := rootOf(t, plan, filepath.Join(dir, "main")).ReadOnly; !slices.Contains(ro, filepath.Join(dir, "main/.git/worktrees/wt")) {
		t.Errorf("main ReadOnly %v lacks the resolved gitdir", ro)
	}
	if plan.CanWrite(filepath.Join(dir, "main/.git/worktrees/wt/HEAD")) {
		t.Errorf("gitdir writable")
	}

	// A pointer to a missing gitdir protects only the file.
	dir2 := tempDir(t)
	writeFile(t, dir2, ".git", "gitdir: /nonexistent/gitdir\n")
	plan = resolve(t, workspace(), sandbox.Context{Cwd: dir2})
	if ro := rootOf(t, plan, dir2).ReadOnly; !reflect.DeepEqual(ro, []string{filepath.Join(dir2, ".git")}) {
		t.Errorf("ReadOnly %v", ro)
	}
}

// TestHostilePointerFiles: a `.git` planted by an earlier run in a parent
// directory (a FIFO, a sparse huge file) must neither block nor exhaust
// the resolution, and is then no parent repository.
func TestHostilePointerFiles(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"fifo", "huge"} {
		dir := tempDir(t)
		mkdirs(t, dir, "sub")
		git := filepath.Join(dir, ".git")
		switch kind {
		case "fifo":
			if err := unix.Mkfifo(git, 0o644); err != nil {
				t.Fatal(err)
			}
		case "huge":
			f, err := os.Create(git)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Truncate(1 << 40); err != nil {
				f.Close()
				t.Skipf("no sparse files here: %v", err)
			}
			f.Close()
		}
		done := make(chan sandbox.Plan, 1)
		go func() { done <- resolve(t, workspace(), sandbox.Context{Cwd: filepath.Join(dir, "sub")}) }()
		select {
		case plan := <-done:
			if !slices.Contains(plan.Placeholders, filepath.Join(dir, "sub/.git")) {
				t.Errorf("%s: sub/.git not shadowed: %v", kind, plan.Placeholders)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: resolution blocked on the planted .git", kind)
		}
	}
}

func TestParentRepoMissingGitIsWatched(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	writeFile(t, dir, ".git/HEAD", "ref: refs/heads/main\n")
	mkdirs(t, dir, "sub")
	plan := resolve(t, workspace(), sandbox.Context{Cwd: filepath.Join(dir, "sub")})
	if !slices.Contains(plan.ProtectedCreate, filepath.Join(dir, "sub/.git")) {
		t.Fatalf("sub/.git not watched: %v", plan.ProtectedCreate)
	}
	if ro := rootOf(t, plan, filepath.Join(dir, "sub")).ReadOnly; len(ro) != 0 {
		t.Fatalf("nothing exists to carve out, got %v", ro)
	}
}

// TestCodexSymlinkRefused is checklist item 14 at the resolution level.
func TestCodexSymlinkRefused(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	mkdirs(t, dir, "decoy")
	writeFile(t, dir, "decoy/config.toml", "x")
	symlink(t, "decoy", dir, ".codex")
	_, err := sandbox.Resolve(workspace(), sandbox.Context{Cwd: dir}, sandbox.PurposeProcess)
	want := "cannot enforce sandbox read-only path " + dir + "/.codex because it crosses writable symlink " + dir + "/.codex"
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
	var se *sandbox.SymlinkCrossingError
	if !errors.Is(err, sandbox.ErrSymlinkCrossing) || !errors.As(err, &se) || se.Deny {
		t.Fatalf("error %#v is not a read-only SymlinkCrossingError", err)
	}
}

func TestDenyThroughWritableSymlinkRefused(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	mkdirs(t, dir, "root", "outside")
	symlink(t, filepath.Join(dir, "outside"), dir, "root/linked")
	p := sandbox.Managed(sandbox.NetworkRestricted,
		sandbox.SpecialEntry(sandbox.SpecialRoot, sandbox.AccessRead),
		sandbox.ProjectRootsEntry("", sandbox.AccessWrite),
		sandbox.ProjectRootsEntry("linked/secret", sandbox.AccessDeny),
	)
	_, err := sandbox.Resolve(p, sandbox.Context{Cwd: filepath.Join(dir, "root")}, sandbox.PurposeProcess)
	link := filepath.Join(dir, "root/linked")
	want := "cannot enforce sandbox deny-read path " + link + "/secret because it crosses writable symlink " + link
	if err == nil || err.Error() != want || !errors.Is(err, sandbox.ErrSymlinkCrossing) {
		t.Fatalf("error %v, want %q", err, want)
	}
	// The same symlink outside any writable root is fine.
	ro := sandbox.Managed(sandbox.NetworkRestricted, sandbox.SpecialEntry(sandbox.SpecialRoot, sandbox.AccessRead),
		sandbox.PathEntry(filepath.Join(link, "secret"), sandbox.AccessDeny))
	writeFile(t, dir, "outside/secret", "s")
	plan := resolve(t, ro, sandbox.Context{Cwd: filepath.Join(dir, "root")})
	if !reflect.DeepEqual(plan.DenyPaths, []string{filepath.Join(dir, "outside/secret")}) {
		t.Fatalf("DenyPaths %v", plan.DenyPaths)
	}
}

// TestSymlinkedWritableRoot: a writable root that is a symlink is bound at
// its canonical target and its carve-outs are remapped (checklist 22).
func TestSymlinkedWritableRoot(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	mkdirs(t, dir, "real/blocked", "real/docs", "real/.git")
	symlink(t, filepath.Join(dir, "real"), dir, "link")
	link, real := filepath.Join(dir, "link"), filepath.Join(dir, "real")
	p := sandbox.Managed(sandbox.NetworkRestricted,
		sandbox.SpecialEntry(sandbox.SpecialRoot, sandbox.AccessRead),
		sandbox.ProjectRootsEntry("", sandbox.AccessWrite),
		sandbox.ProjectRootsEntry("blocked", sandbox.AccessDeny),
		sandbox.ProjectRootsEntry("docs", sandbox.AccessRead),
		sandbox.ProjectRootsEntry("missing", sandbox.AccessDeny),
	)
	plan := resolve(t, p, sandbox.Context{Cwd: link})
	if len(plan.WritableRoots) != 1 || plan.WritableRoots[0].Path != real {
		t.Fatalf("writable roots %+v, want the canonical %s", plan.WritableRoots, real)
	}
	if ro := plan.WritableRoots[0].ReadOnly; !reflect.DeepEqual(ro, []string{real + "/.git", real + "/docs"}) {
		t.Errorf("ReadOnly %v", ro)
	}
	if !reflect.DeepEqual(plan.DenyPaths, []string{real + "/blocked"}) {
		t.Errorf("DenyPaths %v", plan.DenyPaths)
	}
	for _, want := range []string{real + "/.codex", real + "/missing"} {
		if !slices.Contains(plan.ProtectedCreate, want) {
			t.Errorf("ProtectedCreate %v lacks %s", plan.ProtectedCreate, want)
		}
	}
}

func TestMissingPathsInsideAndOutsideRoots(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	mkdirs(t, dir, "w", "elsewhere")
	w := filepath.Join(dir, "w")
	p := sandbox.Managed(sandbox.NetworkRestricted,
		sandbox.SpecialEntry(sandbox.SpecialRoot, sandbox.AccessRead),
		sandbox.PathEntry(w, sandbox.AccessWrite),
		sandbox.PathEntry(filepath.Join(w, "gen/out"), sandbox.AccessRead),       // missing read carve-out
		sandbox.PathEntry(filepath.Join(w, "secret/key"), sandbox.AccessDeny),    // missing deny inside
		sandbox.PathEntry(filepath.Join(dir, "elsewhere/x"), sandbox.AccessDeny), // missing deny outside
		sandbox.PathEntry(filepath.Join(dir, "nope"), sandbox.AccessWrite),       // missing root: skipped
	)
	plan := resolve(t, p, sandbox.Context{Cwd: dir})
	for _, want := range []string{filepath.Join(w, "gen"), filepath.Join(w, "secret")} {
		if !slices.Contains(plan.ProtectedCreate, want) {
			t.Errorf("ProtectedCreate %v lacks %s", plan.ProtectedCreate, want)
		}
	}
	if slices.Contains(plan.ProtectedCreate, filepath.Join(dir, "elsewhere/x")) || len(plan.DenyPaths) != 0 {
		t.Errorf("missing deny outside a root must be ignored: %+v", plan)
	}
	if len(plan.WritableRoots) != 1 || plan.WritableRoots[0].Path != w {
		t.Errorf("writable roots %+v", plan.WritableRoots)
	}
}

func TestDenyAboveWritableRoot(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	mkdirs(t, dir, "blocked/allowed")
	writeFile(t, dir, "blocked/secret.txt", "s")
	p := sandbox.Managed(sandbox.NetworkRestricted,
		sandbox.SpecialEntry(sandbox.SpecialMinimal, sandbox.AccessRead),
		sandbox.ProjectRootsEntry("blocked", sandbox.AccessDeny),
		sandbox.ProjectRootsEntry("blocked/allowed", sandbox.AccessWrite),
	)
	plan := resolve(t, p, sandbox.Context{Cwd: dir})
	note := filepath.Join(dir, "blocked/allowed/note.txt")
	if !plan.CanWrite(note) || !plan.CanRead(note) {
		t.Errorf("blocked/allowed/note.txt must be readable and writable: %+v", plan)
	}
	secret := filepath.Join(dir, "blocked/secret.txt")
	if plan.CanWrite(secret) || plan.CanRead(secret) {
		t.Errorf("blocked/secret.txt must be denied: %+v", plan)
	}
}
