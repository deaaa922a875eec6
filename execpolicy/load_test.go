package execpolicy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every load error text (docs/shell-tool.md §7.2), through LoadFiles.
func TestLoadErrors(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{`prefix_rule(pattern=["git"], decision="ask")`, "invalid decision: ask"},
		{`prefix_rule(pattern=["git"], justification="")`, "invalid rule: justification cannot be empty"},
		{`prefix_rule(pattern=[])`, "invalid pattern element: pattern cannot be empty"},
		{`prefix_rule(pattern=["a", []])`, "invalid pattern element: pattern alternatives cannot be empty"},
		{`prefix_rule(pattern=["a", 1])`, "invalid pattern element: pattern element must be a string or list of strings (got int)"},
		{`prefix_rule(pattern=["a", ["b", 1]])`, "invalid pattern element: pattern alternative must be a string (got int)"},
		{`prefix_rule(pattern=["a"], match=["a \"b"])`, "invalid example: example string has invalid shell syntax"},
		{`prefix_rule(pattern=["a"], match=[""])`, "invalid example: example cannot be an empty string"},
		{`prefix_rule(pattern=["a"], match=[[]])`, "invalid example: example cannot be an empty list"},
		{`prefix_rule(pattern=["a"], match=[1])`, "invalid example: example must be a string or list of strings (got int)"},
		{`prefix_rule(pattern=["a"], match=[["a", 1]])`, "invalid example: example tokens must be strings (got int)"},
		{`prefix_rule()`, "Missing parameter `pattern` for call to `prefix_rule`"},
		{`prefix_rule(pattern=["a"], foo=1)`, "Found `foo` extra named parameter(s) for call to prefix_rule"},
		{`prefix_rule(pattern="a")`, "Type of parameter `pattern` doesn't match, expected `list`, actual `string (repr: \"a\")`"},
		{`load("x.star", "y")`, "No imports are available, you tried `x.star`"},
		{`prefix_rule(pattern=["git", "status"], match=["git"])`,
			`expected every example to match at least one rule. rules: ["PrefixRule { pattern: PrefixPattern { canonical_matching: false, first: \"git\", rest: [Single(\"status\")] }, decision: Allow, justification: None }"]; unmatched examples: ["git"]`},
		{`prefix_rule(pattern=["git"], not_match=["git x"])`,
			"expected example to not match rule `PrefixRuleMatch { matched_prefix: [\"git\"], decision: Allow, resolved_program: None, justification: None }`: git x"},
		{`network_rule(host="h", protocol="ftp", decision="allow")`, "invalid rule: network_rule protocol must be one of http, https, socks5_tcp, socks5_udp (got ftp)"},
		{`network_rule(host="h", protocol="http", decision="ask")`, "invalid decision: ask"},
		{`network_rule(host="*.h", protocol="http", decision="allow")`, "invalid rule: network_rule host must be a specific host; wildcards are not allowed"},
		{`network_rule(host="http://h", protocol="http", decision="allow")`, "invalid rule: network_rule host must be a hostname or IP literal (without scheme or path)"},
		{`host_executable(name="git", paths=["bin/git"])`, "invalid rule: host_executable paths must be absolute (got bin/git)"},
		{`host_executable(name="git", paths=["/bin/gitx"])`, "invalid rule: host_executable path `/bin/gitx` must have basename `git`"},
		{"x = ", "Parse error: "},
		{"foo()", "Variable `foo` not found"},
	} {
		_, err := load(t, tc.src)
		var fe *FileError
		if !errors.As(err, &fe) || fe.Op != "parse" || !strings.HasSuffix(fe.Path, "t.rules") {
			t.Errorf("%s: error %v is not a parse FileError naming the file", tc.src, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s:\n got %s\nwant %s", tc.src, err, tc.want)
		}
	}
}

func TestLoadFilesReadErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.rules")
	if err := os.WriteFile(bad, []byte("prefix_rule(pattern=[\"a\"])\n\xff\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		filepath.Join(dir, "missing.rules"): "failed to read policy at " + filepath.Join(dir, "missing.rules") + ": No such file or directory (os error 2)",
		bad:                                 "failed to read policy at " + bad + ": stream did not contain valid UTF-8",
		dir:                                 "failed to read policy at " + dir + ": Is a directory (os error 21)",
	} {
		if _, err := LoadFiles(path); err == nil || err.Error() != want {
			t.Errorf("LoadFiles(%s) = %v, want %s", path, err, want)
		}
	}
}

// writeRules creates the files of a layer; a value "->X" makes a symlink to X.
func writeRules(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, src := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		if target, ok := strings.CutPrefix(src, "->"); ok {
			err = os.Symlink(target, path)
		} else {
			err = os.WriteFile(path, []byte(src), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestLoadLayers(t *testing.T) {
	sys, home := t.TempDir(), t.TempDir()
	old := SystemRulesDir
	SystemRulesDir = filepath.Join(sys, "rules")
	t.Cleanup(func() { SystemRulesDir = old })
	writeRules(t, sys, map[string]string{"rules/a.rules": `prefix_rule(pattern=["sys"], decision="prompt")`})
	writeRules(t, home, map[string]string{
		"rules/b.rules":       `prefix_rule(pattern=["x", "b"])`,
		"rules/a.rules":       `prefix_rule(pattern=["x"], decision="forbidden")`,
		"rules/.hidden.rules": `prefix_rule(pattern=["hidden"])`,
		"rules/upper.RULES":   `syntax error (`,
		"rules/notes.txt":     `syntax error (`,
		"rules/sub/c.rules":   `syntax error (`,
		"rules/link.rules":    "->" + filepath.Join(home, "rules", "notes.txt"),
		"other.rules":         `syntax error (`,
	})
	p, err := LoadLayers(home)
	if err != nil {
		t.Fatal(err)
	}
	ev := p.Evaluate([]string{"x", "b"})
	if ev.Decision != Forbidden || len(ev.Matches) != 2 || len(ev.Matches[0].MatchedPrefix) != 1 {
		t.Errorf("a.rules before b.rules: %+v", ev)
	}
	for _, prog := range []string{"sys", "hidden"} {
		if ev := p.Evaluate([]string{prog}); !ev.Matched {
			t.Errorf("%s rules not loaded", prog)
		}
	}

	writeRules(t, home, map[string]string{"rules/z.rules": `prefix_rule(pattern=["x"], decision="nope")`})
	_, err = LoadLayers(home)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(home, "rules", "z.rules")) || !strings.Contains(err.Error(), "invalid decision: nope") {
		t.Errorf("bad user file: %v", err)
	}
}

func TestLoadLayersMissing(t *testing.T) {
	old := SystemRulesDir
	SystemRulesDir = filepath.Join(t.TempDir(), "none")
	t.Cleanup(func() { SystemRulesDir = old })
	p, err := LoadLayers(t.TempDir())
	if err != nil {
		t.Fatalf("no rules folders: %v", err)
	}
	if ev := p.Evaluate([]string{"ls"}); ev.Matched {
		t.Errorf("empty policy matched: %+v", ev)
	}
	missing := filepath.Join(t.TempDir(), "gone")
	if _, err := LoadLayers(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing CODEX_HOME: %v", err)
	}
}

func TestLoadRunawayLoopFails(t *testing.T) {
	_, err := load(t, "def f():\n    for i in range(1000000000):\n        pass\nf()\n")
	if err == nil || !strings.Contains(err.Error(), "too many steps") {
		t.Errorf("runaway loop: %v", err)
	}
}

func TestCodexHome(t *testing.T) {
	t.Setenv("CODEX_HOME", "/some/where")
	if h, err := CodexHome(); err != nil || h != "/some/where" {
		t.Errorf("CodexHome() = %q, %v", h, err)
	}
	t.Setenv("CODEX_HOME", "")
	t.Setenv("HOME", "/home/u")
	if h, err := CodexHome(); err != nil || h != "/home/u/.codex" {
		t.Errorf("CodexHome() with CODEX_HOME empty = %q, %v", h, err)
	}
}

func TestFStringsIgnoreRebinding(t *testing.T) {
	p := mustLoad(t, "str = None\nrepr = None\nx = 1\nprefix_rule(pattern=[f\"a{x}\", f\"{'q'!r}\"])\n")
	if ev := p.Evaluate([]string{"a1", `"q"`}); !ev.Matched {
		t.Errorf("f-string with str rebound: %+v", ev)
	}
}

// TestUserLayerHome: without CODEX_HOME, a missing ~/.codex means no user
// layer (not an error); a CODEX_HOME that does not exist stays fatal.
func TestUserLayerHome(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("CODEX_HOME", "")
	if h, err := UserLayerHome(); h != "" || err != nil {
		t.Fatalf("no ~/.codex: %q %v", h, err)
	}
	if _, err := LoadLayers(""); err != nil {
		t.Fatalf("system layer only: %v", err)
	}
	if err := os.Mkdir(filepath.Join(home, ".codex"), 0o755); err != nil {
		t.Fatal(err)
	}
	if h, _ := UserLayerHome(); h != filepath.Join(home, ".codex") {
		t.Fatalf("~/.codex: %q", h)
	}
	t.Setenv("CODEX_HOME", filepath.Join(home, "nope"))
	h, _ := UserLayerHome()
	if _, err := LoadLayers(h); err == nil {
		t.Fatal("a missing CODEX_HOME loaded")
	}
}
