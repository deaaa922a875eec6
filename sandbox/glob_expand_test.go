package sandbox_test

import (
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/codexec/codex/sandbox"
)

// globTree builds the tree the expansion tests walk and returns its root
// (the policy cwd) and a directory outside it.
func globTree(t *testing.T) (cwd, outside string) {
	t.Helper()
	base := tempDir(t)
	cwd, outside = filepath.Join(base, "cwd"), filepath.Join(base, "outside")
	writeFile(t, cwd, "a.env", "1")
	writeFile(t, cwd, "x.txt", "1")
	writeFile(t, cwd, "sub/b.env", "1")
	writeFile(t, cwd, "sub/deeper/c.env", "1")
	writeFile(t, cwd, ".hidden/d.env", "1")
	writeFile(t, cwd, ".gitignore", "*.env\n") // ignored by the walk
	mkdirs(t, cwd, "dir.env")                  // directories never match
	writeFile(t, outside, "target.env", "1")
	writeFile(t, outside, "inner/e.env", "1")
	symlink(t, filepath.Join(outside, "target.env"), cwd, "link.env")
	symlink(t, filepath.Join(outside, "inner"), cwd, "linkdir") // not followed
	return cwd, outside
}

// readOnlyWithGlob is root read plus deny globs: no writable roots.
func readOnlyWithGlob(patterns ...string) sandbox.Profile {
	es := []sandbox.Entry{sandbox.SpecialEntry(sandbox.SpecialRoot, sandbox.AccessRead)}
	for _, p := range patterns {
		es = append(es, sandbox.GlobDenyEntry(p))
	}
	return sandbox.Managed(sandbox.NetworkRestricted, es...)
}

// masked returns the plan's deny paths and matches relative to base,
// sorted.
func masked(base string, plan sandbox.Plan) []string {
	return rel(base, append(slices.Clone(plan.DenyPaths), plan.DenyMatches...))
}

// rel returns paths relative to base, sorted.
func rel(base string, paths []string) []string {
	var out []string
	for _, p := range paths {
		r, err := filepath.Rel(base, p)
		if err != nil {
			panic(err)
		}
		out = append(out, r)
	}
	slices.Sort(out)
	return out
}

func TestGlobExpansion(t *testing.T) {
	t.Parallel()
	cwd, _ := globTree(t)
	// A matched symlink is masked itself (where it is, Plan.DenyMatches),
	// never followed: ../outside/target.env stays readable.
	all := []string{".hidden/d.env", "a.env", "link.env", "sub/b.env", "sub/deeper/c.env"}
	tests := []struct {
		name     string
		patterns []string
		depth    *int
		want     []string
	}{
		{"recursive relative", []string{"**/*.env"}, nil, all},
		{"absolute", []string{cwd + "/**/*.env"}, nil, all},
		{"top level only", []string{"*.env"}, nil, []string{"a.env", "link.env"}},
		{"depth 1", []string{"**/*.env"}, intp(1), []string{"a.env", "link.env"}},
		{"depth 2", []string{"**/*.env"}, intp(2), []string{".hidden/d.env", "a.env", "link.env", "sub/b.env"}},
		{"depth 0 disables", []string{"**/*.env"}, intp(0), nil},
		{"static subdir", []string{"sub/*.env"}, nil, []string{"sub/b.env"}},
		{"literal path", []string{"x.txt"}, nil, []string{"x.txt"}},
		{"alternation", []string{"{a,x}.{env,txt}"}, nil, []string{"a.env", "x.txt"}},
		{"rooted at / is skipped", []string{"/*.env", "/**/*.env"}, nil, nil},
		{"missing search root", []string{"nothere/**/*.env"}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := readOnlyWithGlob(tt.patterns...)
			p.GlobScanMaxDepth = tt.depth
			plan := resolve(t, p, sandbox.Context{Cwd: cwd})
			if got := masked(cwd, plan); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("masked %v, want %v", got, tt.want)
			}
		})
	}
}

// TestHomeGlob is checklist item 26.
func TestHomeGlob(t *testing.T) {
	t.Parallel()
	home := tempDir(t)
	writeFile(t, home, "private/k.env", "1")
	writeFile(t, home, "private/deeper/k.env", "1")
	writeFile(t, home, "public/k.env", "1")
	p := readOnlyWithGlob("~/private/*.env")
	plan := resolve(t, p, sandbox.Context{Cwd: "/", HomeDir: home})
	if !reflect.DeepEqual(plan.DenyMatches, []string{filepath.Join(home, "private/k.env")}) {
		t.Fatalf("DenyMatches %v", plan.DenyMatches)
	}
	_, err := sandbox.Resolve(p, sandbox.Context{Cwd: "/"}, sandbox.PurposeProcess)
	if !errors.Is(err, sandbox.ErrPrepare) || !strings.Contains(err.Error(), "no home directory") {
		t.Fatalf("without a home: error %v, want a fail-closed ErrPrepare", err)
	}
	_, err = sandbox.Resolve(readOnlyWithGlob("*.env"), sandbox.Context{}, sandbox.PurposeProcess)
	if !errors.Is(err, sandbox.ErrPrepare) {
		t.Fatalf("relative glob without cwd: error %v, want ErrPrepare", err)
	}
}

func TestGlobErrors(t *testing.T) {
	t.Parallel()
	cwd, _ := globTree(t)
	_, err := sandbox.Resolve(readOnlyWithGlob("**/{a,{b}}.env"), sandbox.Context{Cwd: cwd}, sandbox.PurposeProcess)
	if !errors.Is(err, sandbox.ErrPrepare) {
		t.Fatalf("malformed pattern: error %v, want ErrPrepare", err)
	}
	// A matching symlink inside a writable root is masked itself: the
	// command may have planted it, pointing anywhere.
	p := sandbox.Managed(sandbox.NetworkRestricted,
		sandbox.SpecialEntry(sandbox.SpecialRoot, sandbox.AccessRead),
		sandbox.ProjectRootsEntry("", sandbox.AccessWrite),
		sandbox.GlobDenyEntry("*.env"))
	plan := resolve(t, p, sandbox.Context{Cwd: cwd})
	if got := masked(cwd, plan); !reflect.DeepEqual(got, []string{"a.env", "link.env"}) {
		t.Fatalf("masked %v", got)
	}
}

// TestGlobWithFullWrite is checklist item 21: a full-write policy with a
// deny glob still masks the match.
func TestGlobWithFullWrite(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	writeFile(t, dir, "app/.env", "SECRET=1")
	p := sandbox.Managed(sandbox.NetworkEnabled,
		sandbox.SpecialEntry(sandbox.SpecialRoot, sandbox.AccessWrite),
		sandbox.GlobDenyEntry("**/*.env"))
	if !sandbox.ProcessNeedsHelper(p) {
		t.Fatalf("ProcessNeedsHelper = false for a full-write profile with deny globs")
	}
	plan := resolve(t, p, sandbox.Context{Cwd: dir})
	if !reflect.DeepEqual(plan.DenyMatches, []string{filepath.Join(dir, "app/.env")}) {
		t.Fatalf("DenyMatches %v", plan.DenyMatches)
	}
	if plan.ReadOnlyRoot || len(plan.WritableRoots) != 0 || plan.Landlock != nil || !plan.NewMountNS || plan.NewNetNS {
		t.Fatalf("plan %+v", plan)
	}
	if plan.Seccomp != sandbox.SeccompVMSocketRestricted {
		t.Fatalf("seccomp %q", plan.Seccomp)
	}
	if !plan.CanWrite("/etc/anything") || plan.CanRead(filepath.Join(dir, "app/.env")) {
		t.Fatalf("CanWrite/CanRead disagree with the policy")
	}
}
