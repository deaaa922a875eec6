package config

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// valuesTOML is the file of the reference probe envcfg.value_shapes: every
// kind of TOML value, in an order that differs from the writer's.
const valuesTOML = `zeta = 1
alpha = 'lit\n'
[t]
s = "a\"b\\c\u00e9\t\u0001"
ml = """x
y"""
i = 0x1F
f = 1.5
f2 = 1e10
f3 = inf
d = 1979-05-27T07:32:00Z
ld = 1979-05-27
lt = 07:32:00
ldt = 1979-05-27T07:32:00
neg = -3
arr = [1, [2, 3], {a = 1}]
aot = [{a = 1}, {b = 2}]
"quoted key" = 1
"a.b" = 2
e = []
ei = {}
[[t.tables]]
n = 1
[[t.tables]]
n = 2
[t.sub]
x.y = 1
`

const mcpTOML = `model = "o3"
[features]
foo = true
bar = 1
[mcp_servers.u]
command = "u"
args = ["a","b"]
env = { X = "1", Y = "2" }
[mcp_servers.v]
url = "http://x"
[mcp_servers.v.http_headers]
A = "b"
`

// TestCutAndWriteMatchesReference holds the cut and the writer to the text
// the reference 0.169.0 returned for the same file and key paths (probes
// envcfg.user_layer_filtered, envcfg.path_shapes, envcfg.value_shapes).
func TestCutAndWriteMatchesReference(t *testing.T) {
	cases := []struct {
		file  string
		paths [][]string
		want  string // "" for no layer
	}{
		{mcpTOML, [][]string{{"mcp_servers"}}, "[mcp_servers.u]\ncommand = \"u\"\nargs = [\"a\", \"b\"]\n\n[mcp_servers.u.env]\nX = \"1\"\nY = \"2\"\n\n[mcp_servers.v]\nurl = \"http://x\"\n\n[mcp_servers.v.http_headers]\nA = \"b\"\n"},
		{mcpTOML, [][]string{{"model"}, {"features", "foo"}}, "model = \"o3\"\n\n[features]\nfoo = true\n"},
		{mcpTOML, [][]string{{"mcp_servers", "u", "command", "deeper"}, {"features", "nope"}}, "[features]\n\n[mcp_servers.u]\ncommand = \"u\"\n"},
		{mcpTOML, [][]string{{"nothing"}}, ""},
		{mcpTOML, [][]string{{"mcp_servers", "v"}}, "[mcp_servers.v]\nurl = \"http://x\"\n\n[mcp_servers.v.http_headers]\nA = \"b\"\n"},
		{mcpTOML, [][]string{{"model"}, {"model"}}, "model = \"o3\"\n"},
		{valuesTOML, [][]string{{"t"}}, "[t]\ns = \"a\\\"b\\\\cé\\t\\u0001\"\nml = \"\"\"\nx\ny\"\"\"\ni = 31\nf = 1.5\nf2 = 10000000000.0\nf3 = inf\nd = 1979-05-27T07:32:00Z\nld = 1979-05-27\nlt = 07:32:00\nldt = 1979-05-27T07:32:00\nneg = -3\narr = [1, [2, 3], { a = 1 }]\n\"quoted key\" = 1\n\"a.b\" = 2\ne = []\n\n[[t.aot]]\na = 1\n\n[[t.aot]]\nb = 2\n\n[t.ei]\n\n[[t.tables]]\nn = 1\n\n[[t.tables]]\nn = 2\n\n[t.sub.x]\ny = 1\n"},
		{valuesTOML, [][]string{{"zeta"}, {"alpha"}}, "zeta = 1\nalpha = 'lit\\n'\n"},
		{valuesTOML, [][]string{{"alpha"}, {"zeta"}}, "zeta = 1\nalpha = 'lit\\n'\n"},
		{valuesTOML, [][]string{{"t", "tables"}}, "[[t.tables]]\nn = 1\n\n[[t.tables]]\nn = 2\n"},
		{valuesTOML, [][]string{{"t", "aot"}, {"t", "arr"}}, "[t]\narr = [1, [2, 3], { a = 1 }]\n\n[[t.aot]]\na = 1\n\n[[t.aot]]\nb = 2\n"},
		{valuesTOML, [][]string{{"t", "sub", "x"}}, "[t.sub.x]\ny = 1\n"},
		{valuesTOML, [][]string{{"t", "e"}, {"t", "ei"}}, "[t]\ne = []\n\n[t.ei]\n"},
	}
	for _, c := range cases {
		home := t.TempDir()
		if err := os.WriteFile(filepath.Join(home, FileName), []byte(c.file), 0o600); err != nil {
			t.Fatal(err)
		}
		layers, err := readConfig(t, home, t.TempDir(), c.paths)
		if err != nil {
			t.Fatalf("%v: %v", c.paths, err)
		}
		if c.want == "" {
			if len(layers) != 0 {
				t.Errorf("%v: got %q, want no layer", c.paths, layers)
			}
			continue
		}
		if len(layers) != 1 || layers[0].TOML != c.want {
			t.Errorf("%v:\n got %q\nwant %q", c.paths, layers, c.want)
			continue
		}
		if want := "user (" + filepath.Join(home, FileName) + ")"; layers[0].Source != want || layers[0].BaseDir != home {
			t.Errorf("%v: source %q base %q", c.paths, layers[0].Source, layers[0].BaseDir)
		}
	}
}

// TestStringQuoting holds the writer's choice of quotes to what the
// reference 0.169.0 wrote for the same strings (probe envcfg.string_quoting):
// basic, then literal, then multi-line basic, then multi-line literal,
// then escaped.
func TestStringQuoting(t *testing.T) {
	for in, want := range map[string]string{
		`plain`:                `"plain"`,
		`a"b`:                  `'a"b'`,
		`a\b`:                  `'a\b'`,
		"a\nb":                 "\"\"\"\na\nb\"\"\"",
		"a\n'b\\":              "'''\na\n'b\\'''",
		`it's "x"`:             `"""it's "x""""`,
		"'\\\"":                `''''\"'''`,
		"\x7f":                 `"\u007F"`,
		"'''\"\"\"\\":          `"'''\"\"\"\\"`,
		"tab\there":            `"tab\there"`,
		"\r\n":                 "\"\"\"\n\\r\n\"\"\"",
		"":                     `""`,
		"say \"\"\"hi\"\"\"\n": "'''\nsay \"\"\"hi\"\"\"\n'''",
		"x\x00'''\n\\":         "\"\"\"\nx\\u0000'''\n\\\\\"\"\"",
	} {
		if got := tomlString(in); got != want {
			t.Errorf("tomlString(%q) = %s, want %s", in, got, want)
		}
	}
	for in, want := range map[string]string{"a-b_1": "a-b_1", "a.b": `"a.b"`, `a"b`: `'a"b'`, "": `""`, "a'\"": `"a'\""`} {
		if got := tomlKey(in); got != want {
			t.Errorf("tomlKey(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestProjectLayers follows the reference's probe envcfg.project_layers:
// a trusted repository contributes the .codex/config.toml of each folder
// from its root down to cwd; a folder's own entry decides, else the root's;
// an untrusted project adds nothing, nor does a trusted folder above the
// root.
func TestProjectLayers(t *testing.T) {
	home := t.TempDir()
	repo := filepath.Join(t.TempDir(), "repo")
	for _, d := range []string{".codex", "pkg/.codex", "pkg/sub", ".git"} {
		if err := os.MkdirAll(filepath.Join(repo, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path, text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(repo, ".git/HEAD"), "ref: refs/heads/main\n")
	write(filepath.Join(repo, ".codex/config.toml"), "a = \"root\"\nb = 1\n")
	write(filepath.Join(repo, "pkg/.codex/config.toml"), "a = \"pkg\"\n")
	sources := func(cwd string, paths ...[]string) string {
		t.Helper()
		layers, err := readConfig(t, home, cwd, paths)
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, l := range layers {
			s = append(s, strings.TrimPrefix(l.Source, "project ("+repo)+"|"+l.TOML)
		}
		return strings.Join(s, ",")
	}
	user := "user (" + filepath.Join(home, FileName) + ")"
	sub := filepath.Join(repo, "pkg/sub")

	write(filepath.Join(home, FileName), "a = \"user\"\n[projects.\""+repo+"\"]\ntrust_level = \"trusted\"\n")
	if got, want := sources(sub, []string{"a"}), user+"|a = \"user\"\n,/.codex/config.toml)|a = \"root\"\n,/pkg/.codex/config.toml)|a = \"pkg\"\n"; got != want {
		t.Errorf("trusted:\n got %q\nwant %q", got, want)
	}
	if got, want := sources(repo, []string{"b"}), "/.codex/config.toml)|b = 1\n"; got != want {
		t.Errorf("trusted root:\n got %q\nwant %q", got, want)
	}
	write(filepath.Join(home, FileName), "a = \"user\"\n[projects.\""+repo+"\"]\ntrust_level = \"untrusted\"\n")
	if got, want := sources(sub, []string{"a"}), user+"|a = \"user\"\n"; got != want {
		t.Errorf("untrusted:\n got %q\nwant %q", got, want)
	}
	write(filepath.Join(home, FileName), "a = \"user\"\n[projects.\""+repo+"/pkg\"]\ntrust_level = \"trusted\"\n")
	if got, want := sources(sub, []string{"a"}), user+"|a = \"user\"\n,/pkg/.codex/config.toml)|a = \"pkg\"\n"; got != want {
		t.Errorf("trusted below the root:\n got %q\nwant %q", got, want)
	}
	write(filepath.Join(home, FileName), "[projects.\""+filepath.Dir(repo)+"\"]\ntrust_level = \"trusted\"\n")
	if got := sources(sub, []string{"a"}); got != "" {
		t.Errorf("trusted above the root: got %q, want no layer", got)
	}
	// An empty .git folder is no repository: the root is cwd, which the
	// repository's entry does not cover.
	if err := os.Remove(filepath.Join(repo, ".git/HEAD")); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(home, FileName), "[projects.\""+repo+"\"]\ntrust_level = \"trusted\"\n")
	if got := sources(filepath.Join(repo, "pkg"), []string{"a"}); got != "" {
		t.Errorf("empty .git: got %q, want no layer", got)
	}
	// A project file that is not TOML is an error that names it.
	write(filepath.Join(home, FileName), "[projects.\""+repo+"/pkg\"]\ntrust_level = \"trusted\"\n")
	write(filepath.Join(repo, "pkg/.codex/config.toml"), "a = \n")
	if _, err := readConfig(t, home, filepath.Join(repo, "pkg"), [][]string{{"a"}}); err == nil || !strings.HasPrefix(err.Error(), "Error parsing project config file "+filepath.Join(repo, "pkg/.codex/config.toml")+": ") {
		t.Errorf("bad project file: %v", err)
	}
}

// TestHomeErrors holds the texts for a CODEX_HOME that is not a folder to
// the reference's (probe envcfg.codex_home), which environmentConfig/read
// puts after "failed to find Codex home: ".
func TestHomeErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for home, want := range map[string]string{
		file:                         `CODEX_HOME points to "` + file + `", but that path is not a directory`,
		filepath.Join(dir, "absent"): `CODEX_HOME points to "` + filepath.Join(dir, "absent") + `", but that path does not exist`,
		"rel/x":                      `CODEX_HOME points to "rel/x", but that path does not exist`,
	} {
		t.Setenv("CODEX_HOME", home)
		if _, err := Home(); err == nil || err.Error() != want {
			t.Errorf("CODEX_HOME=%s: %v, want %s", home, err, want)
		}
	}
	t.Setenv("CODEX_HOME", dir)
	if got, err := Home(); err != nil || got != dir {
		t.Errorf("Home() = %q, %v; want %q", got, err, dir)
	}
}

// readConfig is ReadLayers' configuration layers, with SystemDir an empty
// folder.
func readConfig(t *testing.T, home, cwd string, paths [][]string) ([]Layer, error) {
	t.Helper()
	saved := SystemDir
	SystemDir = t.TempDir()
	defer func() { SystemDir = saved }()
	l, err := ReadLayers(home, cwd, paths, nil)
	return l.Config, err
}

// TestSystemLayers holds the layers of SystemDir to what the reference
// 0.169.0 answered with /etc/codex holding config.toml, managed_config.toml
// and requirements.toml (probe envcfg.system_layers, run in a private mount
// namespace): system first, then user and project, the managed file last;
// the cloud index after the system layers; the requirement layer named by
// its bare path.
func TestSystemLayers(t *testing.T) {
	sys, home, repo := t.TempDir(), t.TempDir(), t.TempDir()
	saved := SystemDir
	SystemDir = sys
	defer func() { SystemDir = saved }()
	write := func(path, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(sys, "config.toml"), "model = \"sys\"\n[mcp_servers.sys]\ncommand = \"s\"\n")
	write(filepath.Join(sys, "managed_config.toml"), "model = \"managed\"\n")
	write(filepath.Join(sys, "requirements.toml"), "[mcp_servers.req]\ncommand = \"r\"\nallowed_approval_policies = [\"never\"]\n")
	write(filepath.Join(home, FileName), "model = \"user\"\n[projects.\""+repo+"\"]\ntrust_level = \"trusted\"\n")
	write(filepath.Join(repo, ".git"), "gitdir: x\n")
	write(filepath.Join(repo, ".codex", FileName), "model = \"proj\"\n")
	show := func(ls []Layer) string {
		var s []string
		for _, l := range ls {
			s = append(s, l.Source+"|"+l.BaseDir+"|"+l.TOML)
		}
		return strings.Join(s, ",")
	}
	got, err := ReadLayers(home, repo, [][]string{{"model"}}, [][]string{{"mcp_servers"}})
	if err != nil {
		t.Fatal(err)
	}
	wantConfig := "system (" + sys + "/config.toml)|" + sys + "|model = \"sys\"\n," +
		"user (" + home + "/config.toml)|" + home + "|model = \"user\"\n," +
		"project (" + repo + "/.codex/config.toml)|" + repo + "/.codex|model = \"proj\"\n," +
		"legacy managed_config.toml (" + sys + "/managed_config.toml)|" + sys + "|model = \"managed\"\n"
	if show(got.Config) != wantConfig || got.ConfigCloudIndex != 1 {
		t.Errorf("config %d:\n got %q\nwant %q", got.ConfigCloudIndex, show(got.Config), wantConfig)
	}
	wantReq := sys + "/requirements.toml|" + sys + "|[mcp_servers.req]\ncommand = \"r\"\nallowed_approval_policies = [\"never\"]\n"
	if show(got.Requirements) != wantReq || got.RequirementsCloudIndex != 1 {
		t.Errorf("requirements %d:\n got %q\nwant %q", got.RequirementsCloudIndex, show(got.Requirements), wantReq)
	}
	// Cut to nothing, a layer is left out and the cloud index counts only
	// what is left.
	got, err = ReadLayers(home, repo, [][]string{{"nothing"}}, [][]string{{"nothing"}})
	if err != nil || len(got.Config)+len(got.Requirements) != 0 || got.ConfigCloudIndex != 0 || got.RequirementsCloudIndex != 0 {
		t.Errorf("cut to nothing: %+v, %v", got, err)
	}
	// The requirements file is read whatever is asked, and refused when it
	// is not TOML or not a file, with the reference's texts.
	req := filepath.Join(sys, "requirements.toml")
	write(req, "a = \n")
	if _, err := ReadLayers(home, repo, [][]string{{"model"}}, nil); err == nil || !strings.HasPrefix(err.Error(), "failed to parse requirements layer "+req+": ") {
		t.Errorf("bad requirements: %v", err)
	}
	if err := os.Remove(req); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(req, 0o600); err != nil {
		t.Fatal(err)
	}
	want := "Failed to read requirements file " + req + ": path `" + req + "` is not a file"
	if _, err := ReadLayers(home, repo, [][]string{{"model"}}, nil); err == nil || err.Error() != want {
		t.Errorf("FIFO requirements: %v, want %s", err, want)
	}
	if err := os.Remove(req); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(sys, "config.toml"), "a = \n")
	if _, err := ReadLayers(home, repo, [][]string{{"model"}}, nil); err == nil || !strings.HasPrefix(err.Error(), sys+"/config.toml:1:") {
		t.Errorf("bad system config: %v", err)
	}
}
