package sandbox

import (
	"reflect"
	"testing"
)

func TestGlobMatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern, path string
		want          bool
	}{
		{"*.env", "a.env", true},
		{"*.env", ".env", true}, // dotfiles are included
		{"*.env", "sub/a.env", false},
		{"*", "a/b", false}, // * never crosses /
		{"a?c", "abc", true},
		{"a?c", "a/c", false}, // ? never crosses /
		{"**/*.env", "a.env", true},
		{"**/*.env", "x/y/z.env", true},
		{"**", "x", true},
		{"**", "x/y", true},
		{"a/**", "a/x/y", true},
		{"a/**", "a", false},
		{"a/**/b", "a/b", true},
		{"a/**/b", "a/x/y/b", true},
		{"a/**/b", "a/x/y/c", false},
		{"[abc].txt", "b.txt", true},
		{"[abc].txt", "d.txt", false},
		{"[!abc].txt", "d.txt", true},
		{"[^abc].txt", "a.txt", false},
		{"[a-c]x", "bx", true},
		{"[]]x", "]x", true},
		{"[*", "[*", true},           // unclosed [ is a literal, * still a star
		{"[*", "[abc", true},         // … matching anything after the literal
		{"file[", "file[", true},     // unclosed [ at the end
		{`\*.env`, "*.env", true},    // escaped star is literal
		{`\*.env`, "a.env", false},   // …and not a wildcard
		{"{a,b}.env", "b.env", true}, // alternation
		{"{a,b}.env", "c.env", false},
		{"x/{a,b/c}/y", "x/b/c/y", true},
		{"{,.}env", ".env", true},
		{"ünï*", "ünïcode", true},
	}
	for _, tt := range tests {
		m, err := compileGlob(tt.pattern)
		if err != nil {
			t.Errorf("compileGlob(%q): %v", tt.pattern, err)
			continue
		}
		if got := m.match(tt.path); got != tt.want {
			t.Errorf("%q matches %q = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
	}
}

func TestGlobMalformed(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"{a,{b}}", "{a,b", "a**b", "[z-a]"} {
		if _, err := compileGlob(p); err == nil {
			t.Errorf("compileGlob(%q) succeeded, want an error", p)
		}
	}
}

func TestFirstMeta(t *testing.T) {
	t.Parallel()
	for pattern, want := range map[string]int{
		"/a/b/*.env": 5, "/a/b": -1, `/a/\*b/c?`: 8, "/x]": 2, "/[a]": 1,
	} {
		if got := firstMeta(pattern); got != want {
			t.Errorf("firstMeta(%q) = %d, want %d", pattern, got, want)
		}
	}
	if got := unescape(`/a/\*b`); got != "/a/*b" {
		t.Errorf("unescape = %q", got)
	}
}

func TestExpandBraces(t *testing.T) {
	t.Parallel()
	got, err := expandBraces("/w/{a,b}/x.{env,key}")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/w/a/x.env", "/w/a/x.key", "/w/b/x.env", "/w/b/x.key"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if got, _ := expandBraces(`/w/\{a,b}/[{]`); !reflect.DeepEqual(got, []string{`/w/\{a,b}/[{]`}) {
		t.Fatalf("escaped and class braces: got %v", got)
	}
}

func TestPathHelpers(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		path, root string
		want       bool
	}{
		{"/a/b", "/a", true}, {"/a", "/a", true}, {"/ab", "/a", false}, {"/x", "/", true}, {"/", "/a", false},
	} {
		if got := within(tt.path, tt.root); got != tt.want {
			t.Errorf("within(%s, %s) = %v", tt.path, tt.root, got)
		}
	}
	if depth("/") != 0 || depth("/a") != 1 || depth("/a/b") != 2 {
		t.Errorf("depth is off")
	}
}
