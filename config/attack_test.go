package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/codexec/codex/sandbox"
)

// The kept protections name absolute paths: a `:workspace_roots` subpath
// deny is compiled against the configured roots, so that a request whose
// sandbox has other workspace roots (another cwd, a sandboxPolicy without
// the configured extra roots) still cannot read it.
func TestProtectionsPinWorkspaceSubpaths(t *testing.T) {
	p := mustLoad(t, `
default_permissions = "dev"
[permissions.dev]
workspace_roots = { "/other" = true }
[permissions.dev.filesystem]
":root" = "read"
":workspace_roots" = { "." = "write", "private" = "none", "a/b" = "deny" }
`)
	deny, _, err := p.Protections("/req")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"/req/private", "/other/private", "/req/a/b", "/other/a/b"} {
		if !slices.Contains(deny, sandbox.PathEntry(want, sandbox.AccessDeny)) {
			t.Errorf("%s missing from %+v", want, deny)
		}
	}
	for _, e := range deny {
		if e.Path.Type == sandbox.PathSpecial {
			t.Errorf("a kept entry still depends on the request's context: %+v", e)
		}
	}
}

// A `:tmpdir` deny also covers the server's own $TMPDIR: a request that
// sets another TMPDIR must not make the configured one readable.
func TestProtectionsPinServerTmpdir(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	p := mustLoad(t, "default_permissions = \"d\"\n[permissions.d.filesystem]\n\":root\" = \"read\"\n\":tmpdir\" = \"none\"\n")
	deny, _, err := p.Protections("/w")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(deny, sandbox.PathEntry(tmp, sandbox.AccessDeny)) || !slices.Contains(deny, sandbox.SpecialEntry(sandbox.SpecialTmpdir, sandbox.AccessDeny)) {
		t.Errorf("protections %+v", deny)
	}
}

// A deny glob whose scan would start at "/" is skipped by the sandbox as
// too broad: accepting it would deny nothing while the file says
// otherwise. The Codex CLI accepts such a file, so it loads, but the
// profile cannot be used: a request for it fails, and as the default no
// request runs at all, its protections failing (failClosed). A request
// whose policy cwd is "/" fails at resolution for the same reason.
func TestDenyGlobRootedAtSlashFails(t *testing.T) {
	for _, text := range []string{
		"[permissions.d.filesystem]\n\"/**/*.env\" = \"none\"\n",
		"[permissions.d.filesystem]\n\"/*\" = \"none\"\n",
		"[permissions.d.filesystem]\n\"/\" = { \"**/*.pem\" = \"none\" }\n",
		"[permissions.d]\nworkspace_roots = { \"/\" = true }\n[permissions.d.filesystem]\n\":workspace_roots\" = { \"**/*.env\" = \"none\" }\n",
	} {
		failClosed(t, text, "rooted at `/`")
	}
	p := mustLoad(t, "default_permissions = \"d\"\n[permissions.d.filesystem]\n\":root\" = \"read\"\n\":workspace_roots\" = { \"**/*.env\" = \"none\" }\n")
	if _, err := p.Resolve("d", "/"); err == nil || !strings.Contains(err.Error(), "rooted at `/`") {
		t.Errorf("resolve at /: %v", err)
	}
	if _, _, err := p.Protections("/"); err == nil {
		t.Error("protections at / fail open")
	}
	if _, _, err := p.Protections("/w"); err != nil {
		t.Error(err)
	}
}

// A deny path whose name holds glob characters is denied literally as
// well as matched as a pattern.
func TestDenyPathWithGlobCharactersIsAlsoLiteral(t *testing.T) {
	dir := t.TempDir()
	lit := filepath.Join(dir, "d[1]", "key")
	if err := os.MkdirAll(filepath.Dir(lit), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lit, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{lit: lit, filepath.Dir(lit) + "/**": filepath.Dir(lit)} {
		p := mustLoad(t, "default_permissions = \"d\"\n[permissions.d.filesystem]\n\":root\" = \"read\"\n\""+key+"\" = \"none\"\n")
		deny, _, err := p.Protections("/w")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(deny, sandbox.PathEntry(want, sandbox.AccessDeny)) {
			t.Errorf("%s: protections %+v", key, deny)
		}
	}
}

// A deny of a whole subtree written as `dir/**` masks the folder itself:
// as a glob it would only deny the files that exist at the start, down to
// glob_scan_max_depth.
func TestDenySubtreeGlobMasksTheFolder(t *testing.T) {
	dir := t.TempDir()
	deep := filepath.Join(dir, "s", "a", "b", "c", "key")
	if err := os.MkdirAll(filepath.Dir(deep), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(deep, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	p := mustLoad(t, `
default_permissions = "d"
[permissions.d.filesystem]
glob_scan_max_depth = 1
":root" = "read"
"`+dir+`/s/**" = "none"
":workspace_roots" = { "w/**" = "none" }
`)
	r, err := p.Resolve("d", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []sandbox.Entry{sandbox.PathEntry(dir+"/s", sandbox.AccessDeny), sandbox.ProjectRootsEntry("w", sandbox.AccessDeny)} {
		if !slices.Contains(r.Profile.Entries, want) {
			t.Errorf("%+v missing from %+v", want, r.Profile.Entries)
		}
	}
	plan, err := sandbox.Resolve(r.Profile, sandbox.Context{Cwd: dir, WorkspaceRoots: r.WorkspaceRoots}, sandbox.PurposeProcess)
	if err != nil {
		t.Fatal(err)
	}
	if plan.CanRead(deep) {
		t.Errorf("%s readable: deny paths %v", deep, plan.DenyPaths)
	}
}

// An unknown special path grants nothing, which is safe for read and
// write; as a deny it would deny nothing, so the profile cannot be used
// (failClosed).
func TestUnknownSpecialPathDenyFails(t *testing.T) {
	for _, text := range []string{
		"[permissions.d.filesystem]\n\":cwd\" = \"none\"\n",
		"[permissions.d.filesystem]\n\":home\" = { \".ssh\" = \"none\" }\n",
	} {
		failClosed(t, text, "unknown special path")
	}
	if _, err := load(t, "[permissions.d.filesystem]\n\":cwd\" = \"write\"\n"); err != nil {
		t.Error(err)
	}
}

// failClosed checks that profile d of text, whose deny cannot be enforced
// (want), is never used: the file loads with a warning, a request for d
// fails, and with d as the default every request fails, whatever profile
// it brings, since d's protections cannot be computed.
func failClosed(t *testing.T, text, want string) {
	t.Helper()
	p, err := load(t, text)
	if err != nil {
		t.Errorf("%q: %v", text, err)
		return
	}
	if _, err := p.Resolve("d", "/w"); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%q: a request for d: %v", text, err)
	}
	if !slices.ContainsFunc(p.Warnings, func(w string) bool { return strings.Contains(w, want) }) {
		t.Errorf("%q: no warning: %q", text, p.Warnings)
	}
	p, err = load(t, "default_permissions = \"d\"\n"+text)
	if err != nil {
		t.Errorf("%q as the default: %v", text, err)
		return
	}
	if _, err := p.Resolve(p.DefaultName(), "/w"); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%q: a request for the default: %v", text, err)
	}
	if _, _, err := p.Protections("/w"); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%q: the default's protections fail open: %v", text, err)
	}
}

// Two spellings of one path do not let the laxer one win: the tie goes
// to the deny, also across extends.
func TestDenyWinsOverAnotherSpelling(t *testing.T) {
	p := mustLoad(t, `
[permissions.p.filesystem]
":root" = "read"
"/x" = "none"
[permissions.c]
extends = "p"
[permissions.c.filesystem]
"/x/" = "write"
"/x/." = "read"
`)
	r, err := p.Resolve("c", "/w")
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Profile.Access("/x/y", sandbox.Context{Cwd: "/w"}); got != sandbox.AccessDeny {
		t.Errorf("/x/y: %s", got)
	}
}

// A child's plain value replaces its parent's table whole, deny subpaths
// included; the load says so.
func TestExtendsDroppingDeniesWarns(t *testing.T) {
	p := mustLoad(t, `
[permissions.p.filesystem]
":root" = "read"
":workspace_roots" = { "." = "write", "**/*.env" = "none" }
[permissions.c]
extends = "p"
filesystem = { ":workspace_roots" = "write" }
`)
	if len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "whose deny of `**/*.env` no longer applies") {
		t.Errorf("warnings %q", p.Warnings)
	}
}

// A deny glob that matches a folder denies the files in it: the sandbox's
// scan matches files only.
func TestDenyGlobMatchingAFolder(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "app", ".secrets", "key")
	if err := os.MkdirAll(filepath.Dir(key), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	p := mustLoad(t, "default_permissions = \"d\"\n[permissions.d.filesystem]\n\":root\" = \"read\"\n\":workspace_roots\" = { \"**/.secrets\" = \"none\" }\n")
	r, err := p.Resolve("d", dir)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := sandbox.Resolve(r.Profile, sandbox.Context{Cwd: dir, WorkspaceRoots: r.WorkspaceRoots}, sandbox.PurposeProcess)
	if err != nil {
		t.Fatal(err)
	}
	if plan.CanRead(key) {
		t.Errorf("%s readable: deny paths %v", key, plan.DenyPaths)
	}
}
