package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/codexec/codex/sandbox"
)

// load writes text as a config file and loads it.
func load(t *testing.T, text string) (*Permissions, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), FileName)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return Load(path)
}

func mustLoad(t *testing.T, text string) *Permissions {
	t.Helper()
	p, err := load(t, text)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestMissingFileIsReadOnly(t *testing.T) {
	p, err := Load(filepath.Join(t.TempDir(), "nope", FileName))
	if err != nil {
		t.Fatal(err)
	}
	if p.DefaultName() != ReadOnly {
		t.Fatalf("default %q", p.DefaultName())
	}
	r, err := p.Resolve(p.DefaultName(), "/w")
	if err != nil || r.Disabled || r.Profile.FullNetwork() || r.Profile.FullDiskWrite() {
		t.Fatalf("%+v %v", r, err)
	}
	if d, _, _ := p.Protections("/w"); d != nil {
		t.Fatalf("protections %v", d)
	}
}

func TestSyntaxErrorNamesFileAndLine(t *testing.T) {
	_, err := load(t, "model = \"x\"\n\ndefault_permissions = \"dev\n")
	var ce *Error
	if !errors.As(err, &ce) || ce.Line != 3 || !strings.Contains(err.Error(), FileName+":3: ") {
		t.Fatalf("%v", err)
	}
}

// TestSemanticErrors: what the Codex CLI refuses stops the load, with its
// text. A profile that cannot be compiled stops it only as the default
// (the CLI compiles that one alone), and a setting the CLI accepts but
// this executor cannot honour never does: the load warns once, naming the
// key, and a request that uses the profile fails with the same error.
func TestSemanticErrors(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"default_permissions = \"nosuch\"\n[permissions.dev.filesystem]\n\":root\" = \"read\"", "default_permissions refers to undefined profile `nosuch`"},
		{"default_permissions = \"dev\"", "default_permissions requires a `[permissions]` table"},
		{"default_permissions = \":foo\"", "default_permissions refers to unknown built-in profile `:foo`"},
		{"[permissions.dev.filesystem]\n\":root\" = \"bogus\"", `must be "read", "write" or "none"`},
		{"[permissions.\":dev\".filesystem]\n\":root\" = \"read\"", "permissions profile `:dev` uses a reserved built-in profile prefix"},
		{"default_permissions = 3", "default_permissions: must be a string"},
	} {
		_, err := load(t, c.text)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q:\n got %v\nwant …%s…", c.text, err, c.want)
		}
	}
	for _, c := range []struct {
		name, text, want string
		unsupported      bool
	}{
		{"dev", "[permissions.dev.filesystem]\n\"rel/x\" = \"read\"", "filesystem path `rel/x` must be absolute, use `~/...`, or start with `:`", false},
		{"dev", "[permissions.dev.filesystem]\n\":root\" = { x = \"read\" }", "filesystem path `:root` does not support nested entries", false},
		{"dev", "[permissions.dev.filesystem]\nglob_scan_max_depth = 0", "permissions.dev.filesystem.glob_scan_max_depth: glob_scan_max_depth must be at least 1", false},
		{"a", "[permissions.a]\nextends = \"b\"\n[permissions.b]\nextends = \"a\"", "permissions profile inheritance cycle detected: a -> b -> a", false},
		{"a", "[permissions.a]\nextends = \":danger-full-access\"", "permissions profile `a` cannot extend unsupported built-in profile `:danger-full-access`", false},
		{"a", "[permissions.a]\nextends = \"zz\"", "permissions profile `a` extends undefined profile `zz`", false},
		{"a", "[permissions.a.filesystem]\n\"/x/*.txt\" = \"read\"", "filesystem glob path `/x/*.txt` only supports `deny` access", false},
		{"a", "[permissions.a.filesystem]\n\":workspace_roots\" = { \"../up\" = \"read\" }", "filesystem subpath `../up` must be a descendant path", false},
		{"a", "[permissions.a.filesystem]\n\":root\" = \"read\"\n[permissions.a.network]\nenabled = true\ndomains = { \"example.com\" = \"allow\" }", "permissions.a.network.domains: narrows the network through a proxy", true},
		{"a", "[permissions.a.filesystem]\n\":root\" = \"read\"\n\"/**/*.env\" = \"none\"", "is rooted at `/`", true},
	} {
		p, err := load(t, c.text)
		if err != nil {
			t.Errorf("%q as another profile than the default: %v", c.text, err)
			continue
		}
		warned := slices.ContainsFunc(p.Warnings, func(w string) bool {
			return strings.Contains(w, c.want) && strings.Contains(w, "uses profile `"+c.name+"`")
		})
		if !warned || !p.Unusable(c.name) {
			t.Errorf("%q: warnings %q", c.text, p.Warnings)
		}
		if _, err := p.Resolve(c.name, "/w"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: a request for %s: %v", c.text, c.name, err)
		}
		p, err = load(t, "default_permissions = \""+c.name+"\"\n"+c.text)
		switch {
		case !c.unsupported && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%q as the default:\n got %v\nwant …%s…", c.text, err, c.want)
		case c.unsupported && err != nil:
			t.Errorf("%q as the default: %v", c.text, err)
		case c.unsupported:
			if _, err := p.Resolve(p.DefaultName(), "/w"); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%q: a request for the default: %v", c.text, err)
			}
		}
	}
}

func TestUserProfileCompiles(t *testing.T) {
	p := mustLoad(t, `
model = "ignored"
default_permissions = "dev"
[permissions.dev]
description = "dev"
workspace_roots = { "/other" = true, "off" = false, "rel" = true }
[permissions.dev.filesystem]
glob_scan_max_depth = 3
":minimal" = "read"
":workspace_roots" = { "." = "write", "**/*.env" = "none", "docs" = "read" }
"/data/**" = "read"
"/etc/secret" = "none"
"/home/*/.ssh/**" = "none"
":cwd" = "write"
[permissions.dev.network]
enabled = true
`)
	r, err := p.Resolve("dev", "/w")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"/w", "/other", "/w/rel"}; !slices.Equal(r.WorkspaceRoots, want) {
		t.Errorf("roots %v, want %v", r.WorkspaceRoots, want)
	}
	if !r.Profile.FullNetwork() || r.Profile.GlobScanMaxDepth == nil || *r.Profile.GlobScanMaxDepth != 3 {
		t.Errorf("network/depth: %+v", r.Profile)
	}
	want := []sandbox.Entry{
		sandbox.PathEntry("/data", sandbox.AccessRead),
		sandbox.PathEntry("/etc/secret", sandbox.AccessDeny),
		sandbox.GlobDenyEntry("/home/*/.ssh/**"),
		sandbox.SpecialEntry(sandbox.SpecialMinimal, sandbox.AccessRead),
		sandbox.ProjectRootsEntry("", sandbox.AccessWrite),
		sandbox.GlobDenyEntry("/w/**/*.env"),
		sandbox.GlobDenyEntry("/w/**/*.env/**"),
		sandbox.GlobDenyEntry("/other/**/*.env"),
		sandbox.GlobDenyEntry("/other/**/*.env/**"),
		sandbox.GlobDenyEntry("/w/rel/**/*.env"),
		sandbox.GlobDenyEntry("/w/rel/**/*.env/**"),
		sandbox.ProjectRootsEntry("docs", sandbox.AccessRead),
	}
	key := func(e sandbox.Entry) string { return fmt.Sprintf("%v %s", e.Path, e.Access) }
	got, exp := make([]string, 0, len(want)), make([]string, 0, len(want))
	for i := range r.Profile.Entries {
		got = append(got, key(r.Profile.Entries[i]))
	}
	for i := range want {
		exp = append(exp, key(want[i]))
	}
	slices.Sort(got)
	slices.Sort(exp)
	if !slices.Equal(got, exp) {
		t.Errorf("entries\n got %+v\nwant %+v", r.Profile.Entries, want)
	}
	if len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], `":cwd": unknown special path`) {
		t.Errorf("warnings %q", p.Warnings)
	}
	deny, depth, _ := p.Protections("/req")
	if len(deny) != 8 || depth == nil || *depth != 3 || deny[2].Path.Pattern != "/req/**/*.env" {
		t.Errorf("protections %+v %v", deny, depth)
	}
}

func TestExtendsBuiltinAndUser(t *testing.T) {
	p := mustLoad(t, `
default_permissions = "c"
[permissions.p]
extends = ":workspace"
network = { enabled = true }
[permissions.c]
extends = "p"
filesystem = { ":workspace_roots" = { "*.env" = "none" }, ":root" = "none" }
`)
	r, err := p.Resolve("c", "/w")
	if err != nil {
		t.Fatal(err)
	}
	if !r.Profile.FullNetwork() {
		t.Error("network not inherited")
	}
	ctx := sandbox.Context{Cwd: "/w", WorkspaceRoots: r.WorkspaceRoots}
	if got := r.Profile.Access("/w/src", ctx); got != sandbox.AccessWrite {
		t.Errorf("/w/src: %s (the :workspace base is lost)", got)
	}
	if got := r.Profile.Access("/usr", ctx); got != sandbox.AccessDeny {
		t.Errorf("/usr: %s (the child's :root must replace the base's)", got)
	}
	if !slices.ContainsFunc(r.Profile.Entries, func(e sandbox.Entry) bool { return e.Path.Pattern == "/w/*.env" }) {
		t.Errorf("child glob missing: %+v", r.Profile.Entries)
	}
}

func TestRequestNamesUnknownProfile(t *testing.T) {
	p := mustLoad(t, "[permissions.dev.filesystem]\n\":root\" = \"read\"\n")
	_, err := p.Resolve("nosuch", "/w")
	var re *ResolveError
	if !errors.As(err, &re) || re.Msg != "default_permissions refers to undefined profile `nosuch`" {
		t.Fatal(err)
	}
	var nilp *Permissions
	if _, err := nilp.Resolve("dev", "/w"); err == nil || err.Error() != "default_permissions requires a `[permissions]` table" {
		t.Fatal(err)
	}
	if r, err := nilp.Resolve(DangerFullAccess, "/w"); err != nil || !r.Disabled {
		t.Fatal(r, err)
	}
}

func TestEscapesRootsInGlobs(t *testing.T) {
	p := mustLoad(t, "[permissions.d.filesystem]\n\":workspace_roots\" = { \"*.env\" = \"none\" }\n")
	r, err := p.Resolve("d", "/w[1]")
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Profile.Entries[0].Path.Pattern; got != `/w\[1\]/*.env` {
		t.Fatalf("pattern %q", got)
	}
}

// FuzzLoad: no file makes Load panic, and a file it accepts resolves its
// default profile.
func FuzzLoad(f *testing.F) {
	f.Add("default_permissions = \"dev\"\n[permissions.dev.filesystem]\n\":root\" = \"read\"\n\":workspace_roots\" = { \".\" = \"write\", \"**/*.env\" = \"none\" }\n")
	f.Add("[permissions.a]\nextends = \"b\"\n[permissions.b]\nextends = \":workspace\"\nnetwork = { enabled = true }\n")
	f.Add("[permissions.a.filesystem]\n\"/x/[a\" = \"none\"\n\"~/y/**\" = \"read\"\nglob_scan_max_depth = 2\n")
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, text string) {
		path := filepath.Join(dir, FileName)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		p, err := Load(path)
		if err != nil {
			return
		}
		if _, err := p.Resolve(p.DefaultName(), "/w"); err != nil {
			t.Fatalf("%q: loaded, but its default does not resolve: %v", text, err)
		}
	})
}
