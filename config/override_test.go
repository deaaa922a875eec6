package config

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestParseOverride: `-c key=value` as the Codex CLI 0.169.0 reads it,
// texts included (docs/operations.md §7).
func TestParseOverride(t *testing.T) {
	for _, c := range []struct {
		in   string
		path []string
		val  any
		err  string
	}{
		{in: `model="o3"`, path: []string{"model"}, val: "o3"},
		{in: `model=o3`, path: []string{"model"}, val: "o3"}, // not TOML: the literal
		{in: ` model = o3 `, path: []string{"model"}, val: "o3"},
		{in: `model=`, path: []string{"model"}, val: ""},
		{in: `a==1`, path: []string{"a"}, val: "=1"},
		{in: `model=a=b`, path: []string{"model"}, val: "a=b"},
		{in: `x=[1,`, path: []string{"x"}, val: "[1,"},
		{in: `n=42`, path: []string{"n"}, val: int64(42)},
		{in: `b=true`, path: []string{"b"}, val: true},
		{in: `l=["a", "b"]`, path: []string{"l"}, val: []any{"a", "b"}},
		{in: `t={a = 1}`, path: []string{"t"}, val: map[string]any{"a": int64(1)}},
		{in: `permissions.dev.filesystem.":root"=read`, path: []string{"permissions", "dev", "filesystem", `":root"`}, val: "read"},
		{in: `tui .zzz=1`, path: []string{"tui ", "zzz"}, val: int64(1)},
		{in: `foo`, err: "Invalid override (missing '='): foo"},
		{in: `=x`, err: "Empty key in override: =x"},
	} {
		o, err := ParseOverride(c.in)
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("%q: %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || !slices.Equal(o.Path, c.path) || !reflect.DeepEqual(o.Value, c.val) {
			t.Errorf("%q: %q %#v %v, want %q %#v", c.in, o.Path, o.Value, err, c.path, c.val)
		}
	}
}

// TestFeatureOverride: --enable and --disable take the names of `codex
// features list` and the legacy aliases, nothing else.
func TestFeatureOverride(t *testing.T) {
	for _, name := range []string{"shell_tool", "network_proxy", "js_repl", "guardianv2.thread_context", "connectors", "web_search", "collab", "codex_hooks"} {
		if o, err := FeatureOverride(name, true); err != nil || o.Key() != "features."+name || o.Value != true {
			t.Errorf("%s: %+v %v", name, o, err)
		}
	}
	for _, name := range []string{"bogus_feature", "", "Shell_Tool", "features.shell_tool", "include_apply_patch_tool"} {
		if _, err := FeatureOverride(name, false); err == nil || err.Error() != "Unknown feature flag: "+name {
			t.Errorf("%q: %v", name, err)
		}
	}
}

// loadOpts writes text (nothing when it is "-") and loads it with opts.
func loadOpts(t *testing.T, text string, strict bool, overrides ...string) (*Permissions, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), FileName)
	if text != "-" {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	opts := Options{Strict: strict}
	for _, s := range overrides {
		o, err := ParseOverride(s)
		if err != nil {
			t.Fatal(err)
		}
		opts.Overrides = append(opts.Overrides, o)
	}
	return LoadWith(path, opts)
}

// TestStrictConfig: the texts and positions the Codex CLI 0.169.0 gives,
// as probed: top-level keys before feature names, the override before the
// file; what lies below the CLI's other tables is not checked.
func TestStrictConfig(t *testing.T) {
	for _, c := range []struct {
		text      string
		overrides []string
		want      string // after the file's path; "" for no error
	}{
		{"zzz_unknown = 1\n", nil, ":1:1: unknown configuration field `zzz_unknown`"},
		{"model = \"x\"\nzzz_unknown = 1\n", nil, ":2:1: unknown configuration field `zzz_unknown`"},
		{"[zzz]\na=1\n", nil, ":1:2: unknown configuration field `zzz`"},
		{"  zzz = 1\n", nil, ":1:3: unknown configuration field `zzz`"},
		{"[features]\n  zzz=true\n", nil, ":2:3: unknown configuration field `features.zzz`"},
		{"zzz_b=1\nzzz_a=2\n", nil, ":1:1: unknown configuration field `zzz_b`"},
		{"model=\"x\"\n[features]\nzzz=true\n[zzz]\n", nil, ":4:2: unknown configuration field `zzz`"},
		{"[[zzz]]\na=1\n", nil, ":1:3: unknown configuration field `zzz`"},
		{"\"zz.z\" = 1\n", nil, ":1:1: unknown configuration field `zz.z`"},
		{"features.zzz = true\n", nil, ":1:10: unknown configuration field `features.zzz`"},
		{"model = \"x\"\n[tui]\nzzz = 1\n[features]\nconnectors = true\nnetwork_proxy = { enabled = true }\n[permissions.dev]\nzzz = 1\n", nil, ""},
		{"zzz=1\n", []string{"zzz2=1"}, "unknown configuration field `zzz2` in -c/--config override"},
		{"-", []string{"model=o3", "x=1", "y=2"}, "unknown configuration field `x` in -c/--config override"},
		{"-", []string{"features.zzz=true"}, "unknown configuration field `features.zzz` in -c/--config override"},
		{"-", []string{"features={shell_tool=true, zzz=false}"}, "unknown configuration field `features.zzz` in -c/--config override"},
		{"-", []string{"tui .zzz=1"}, "unknown configuration field `tui ` in -c/--config override"},
		{"-", []string{"tui.zzz=1", "features.shell_tool=false"}, ""},
	} {
		_, err := loadOpts(t, c.text, true, c.overrides...)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q %q: %v", c.text, c.overrides, err)
		case c.want != "" && (err == nil || !strings.HasSuffix(err.Error(), c.want)):
			t.Errorf("%q %q:\n got %v\nwant …%s", c.text, c.overrides, err, c.want)
		}
		if c.want != "" {
			if _, err := loadOpts(t, c.text, false, c.overrides...); err != nil {
				t.Errorf("%q %q without --strict-config: %v", c.text, c.overrides, err)
			}
		}
	}
}

// TestOverridesApply: -c sets what the executor reads, over the file and
// in order; what it does not read is a warning that names the key.
func TestOverridesApply(t *testing.T) {
	p, err := loadOpts(t, "default_permissions = \"dev\"\n[permissions.dev.filesystem]\n\":root\" = \"read\"\n", false,
		`permissions.net.filesystem={":root"="read"}`, `permissions.net.network.enabled=true`,
		`default_permissions=net`, `model=o3`, `features.shell_tool=false`)
	if err != nil {
		t.Fatal(err)
	}
	r, err := p.Resolve(p.DefaultName(), "/w")
	if p.DefaultName() != "net" || err != nil || !r.Profile.FullNetwork() {
		t.Errorf("default %q: %+v %v", p.DefaultName(), r, err)
	}
	for _, want := range []string{"model=o3: `model` is not read by the exec-server", "features.shell_tool=false: feature `shell_tool` has no effect"} {
		if !slices.ContainsFunc(p.Warnings, func(w string) bool { return strings.HasPrefix(w, want) }) {
			t.Errorf("no warning %q in %q", want, p.Warnings)
		}
	}
	// No file at all: the overrides alone.
	p, err = loadOpts(t, "-", false, `default_permissions=":workspace"`)
	if err != nil || p.DefaultName() != Workspace {
		t.Errorf("%v %q", err, p.DefaultName())
	}
	// An override can make the file unusable like the file itself.
	if _, err := loadOpts(t, "-", false, `default_permissions=nosuch`); err == nil || !strings.Contains(err.Error(), "default_permissions requires a `[permissions]` table") {
		t.Errorf("%v", err)
	}
}

// TestNarrowedNetwork is failure 5 of issue 18 at the loader: a profile
// whose network a proxy setting narrows loads (the Codex CLI accepts it),
// with one warning naming the key; it cannot run a command, also through
// extends, but its file-system protections still apply as the default.
func TestNarrowedNetwork(t *testing.T) {
	text := `default_permissions = "dev"
[permissions.dev.filesystem]
":root" = "read"
"/srv/secret" = "none"
[permissions.dev.network]
enabled = true
domains = { "api.example.com" = "allow" }
[permissions.child]
extends = "dev"
[permissions.off]
extends = "dev"
network = { enabled = false }
`
	p, err := load(t, text)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, w := range p.Warnings {
		if strings.Contains(w, "permissions.dev.network.domains") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d warnings name the key: %q", n, p.Warnings)
	}
	for _, name := range []string{"dev", "child"} {
		if _, err := p.Resolve(name, "/w"); err == nil || !strings.Contains(err.Error(), "permissions.dev.network.domains: narrows the network through a proxy") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if r, err := p.Resolve("off", "/w"); err != nil || r.Profile.FullNetwork() {
		t.Errorf("off: %+v %v", r, err)
	}
	deny, _, err := p.Protections("/w")
	if err != nil || len(deny) == 0 {
		t.Errorf("protections of the default: %v %v", deny, err)
	}
}
