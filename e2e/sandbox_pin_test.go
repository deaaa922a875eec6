package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// denyProfile is a managed profile: the root readable, the project (the
// cwd) writable, /tmp writable too when slashTmp, and the given deny
// entries (globs are relative to the cwd, paths absolute).
func denyProfile(t *testing.T, slashTmp bool, globs, paths []string) string {
	t.Helper()
	special := func(kind string) map[string]any {
		return map[string]any{"type": "special", "value": map[string]any{"kind": kind}}
	}
	entries := []any{
		map[string]any{"path": special("root"), "access": "read"},
		map[string]any{"path": special("project_roots"), "access": "write"},
	}
	if slashTmp {
		entries = append(entries, map[string]any{"path": special("slash_tmp"), "access": "write"})
	}
	for _, g := range globs {
		entries = append(entries, map[string]any{"path": map[string]any{"type": "glob_pattern", "pattern": g}, "access": "deny"})
	}
	for _, p := range paths {
		entries = append(entries, map[string]any{"path": map[string]any{"type": "path", "path": p}, "access": "deny"})
	}
	b, err := json.Marshal(map[string]any{
		"type":        "managed",
		"file_system": map[string]any{"type": "restricted", "entries": entries},
		"network":     "restricted",
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// writeSecret creates dir/rel holding a recognisable secret.
func writeSecret(t *testing.T, dir, rel string) {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("TOPSECRET-"+rel+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDenyReadSurvivesRenames is the renaming case of docs/sandbox.md §4.3 step 6: run 1 renames the
// folders that lead to denied files (a parent, a grand-parent, a folder
// three levels up), links and copies the masked paths; run 2 of the same
// policy then reads the secrets under the names run 1 gave them. No secret
// may come out, and the folders on the way must stay writable.
func TestDenyReadSurvivesRenames(t *testing.T) {
	_, proj, prof := pinFixture(t)
	run1 := strings.Join([]string{
		"ln secrets/token linked", "cp config/secret.key copied",
		"mv secrets s2", "mv sub sub2", "mv config c2", "mv rel r2", "mv deep deep2", "mv deep/a deep/a2",
		"rmdir deep/a/b", "echo written > config/new.txt",
	}, "; ")
	out, _ := sandboxCLI(t, proj, "--profile-json", prof, "--", "sh", "-c", run1)
	t.Logf("run 1: %s", out)
	if b, err := os.ReadFile(filepath.Join(proj, "config/new.txt")); err != nil || string(b) != "written\n" {
		t.Errorf("a write into a folder on the way to a deny path failed: %q %v", b, err)
	}
	for _, rel := range []string{"secrets", "sub/secrets", "config", "rel", "deep", "deep/a", "deep/a/b"} {
		if _, err := os.Stat(filepath.Join(proj, rel)); err != nil {
			t.Errorf("run 1 renamed %s away: %v", rel, err)
		}
	}
	assertNoSecret(t, proj, prof, "s2/token", "sub2/secrets/token", "c2/secret.key", "r2/secret.key", "deep2/a/b/key",
		"deep/a2/b/key", "linked", "copied", "secrets/token", "config/secret.key")
}

// TestDenyReadSurvivesProjectMove is the same attack one level up: with /tmp
// writable, run 1 moves the folder holding the project and recreates an
// empty project in its place; run 2 reads the secrets at the moved path.
func TestDenyReadSurvivesProjectMove(t *testing.T) {
	base, proj, prof := pinFixture(t)
	out, _ := sandboxCLI(t, proj, "--profile-json", prof, "--", "sh", "-c",
		"mv "+base+" "+base+".moved && mkdir -p "+proj)
	t.Logf("run 1: %s", out)
	assertNoSecret(t, proj, prof, base+".moved/proj/secrets/token", base+".moved/proj/config/secret.key")
}

// pinFixture makes /tmp/pin-*/proj holding five secrets, and the policy
// that denies them: the globs **/secrets/* and rel/secret.key (relative to
// the cwd) and two absolute paths, with the project and /tmp writable.
func pinFixture(t *testing.T) (base, proj, prof string) {
	t.Helper()
	base, err := os.MkdirTemp("/tmp", "pin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		os.RemoveAll(base)
		os.RemoveAll(base + ".moved")
	})
	proj = filepath.Join(base, "proj")
	for _, rel := range []string{"secrets/token", "sub/secrets/token", "config/secret.key", "rel/secret.key", "deep/a/b/key"} {
		writeSecret(t, proj, rel)
	}
	prof = denyProfile(t, true, []string{"**/secrets/*", "rel/secret.key"},
		[]string{filepath.Join(proj, "config/secret.key"), filepath.Join(proj, "deep/a/b/key")})
	return base, proj, prof
}

// assertNoSecret runs `cat paths...` under prof in dir and fails if any
// secret comes out.
func assertNoSecret(t *testing.T, dir, prof string, paths ...string) {
	t.Helper()
	out, _ := sandboxCLI(t, dir, "--profile-json", prof, "--", "sh", "-c", "cat "+strings.Join(paths, " ")+" 2>&1; true")
	if strings.Contains(out, "TOPSECRET") {
		t.Fatalf("run 2 read a denied file after run 1's changes:\n%s", out)
	}
}
