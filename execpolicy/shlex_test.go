package execpolicy

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestSplitShell(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  bool
	}{
		{in: "", want: nil},
		{in: "  \t\n", want: nil},
		{in: "a b  c", want: []string{"a", "b", "c"}},
		{in: "a\tb\nc", want: []string{"a", "b", "c"}},
		{in: "'a b' c", want: []string{"a b", "c"}},
		{in: `"a b" c`, want: []string{"a b", "c"}},
		{in: `a\ b`, want: []string{"a b"}},
		{in: `"it's"`, want: []string{"it's"}},
		{in: `it\'s`, want: []string{"it's"}},
		{in: `'a\b'`, want: []string{`a\b`}},
		{in: `"a\$b\"c\\d\e"`, want: []string{`a$b"c\d\e`}},
		{in: "\"a\\\nb\"", want: []string{"ab"}},
		{in: "a\\\nb", want: []string{"ab"}},
		{in: "a \\\n b", want: []string{"a", "", "b"}},
		{in: `x''y""z`, want: []string{"xyz"}},
		{in: `'' ""`, want: []string{"", ""}},
		{in: "a #comment\nb", want: []string{"a", "b"}},
		{in: "a#b", want: []string{"a#b"}},
		{in: "# only", want: nil},
		{in: "a;b|c&&d", want: []string{"a;b|c&&d"}},
		{in: "a\rb", want: []string{"a\rb"}},
		{in: "é ü", want: []string{"é", "ü"}},
		{in: `"unterminated`, err: true},
		{in: `'unterminated`, err: true},
		{in: `trailing\`, err: true},
		{in: `"a\`, err: true},
	} {
		got, err := SplitShell(tc.in)
		if tc.err {
			if !errors.Is(err, ErrShellSyntax) {
				t.Errorf("SplitShell(%q) = %q, %v; want ErrShellSyntax", tc.in, got, err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("SplitShell(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// The quoting of the reference's load errors (Rust shlex), as observed.
func TestJoinShell(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{[]string{"plain", "-n", "a/b.c:d@e+f_]"}, "plain -n a/b.c:d@e+f_]"},
		{[]string{"a b"}, "'a b'"},
		{[]string{"it's"}, `"it's"`},
		{[]string{"x$y"}, "'x$y'"},
		{[]string{"a=b"}, "'a=b'"},
		{[]string{"a^b"}, "a'^b'"},
		{[]string{"^a"}, "'^a'"},
		{[]string{`back\slash`}, `"back\\slash"`},
		{[]string{""}, "''"},
		{[]string{"é"}, "'é'"},
		{[]string{"a\nb"}, "'a\nb'"},
		{[]string{`x'y\`}, `"x'y\\"`},
		{[]string{"~", "{x}", "*", "a!b", "[x", "%", "a,b", "#"}, "'~' '{x}' '*' 'a!b' '[x' '%' 'a,b' '#'"},
		{[]string{`'$`}, `"'"'$'`},
	} {
		got, ok := JoinShell(tc.in)
		if !ok || got != tc.want {
			t.Errorf("JoinShell(%q) = %q, %v; want %q", tc.in, got, ok, tc.want)
		}
	}
	if _, ok := JoinShell([]string{"a\x00"}); ok {
		t.Error("JoinShell accepted a NUL byte")
	}
}

// FuzzSplitShell checks that splitting never panics and that joining the
// words and splitting again gives them back.
func FuzzSplitShell(f *testing.F) {
	for _, s := range []string{"a b", `"a\"b" 'c d'`, "x\\\ny", "# c\nz", `"`, "a^b 'x$y'", "\\"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, err := SplitShell(s)
		if err != nil {
			return
		}
		joined, ok := JoinShell(words)
		if !ok {
			return // a NUL byte
		}
		again, err := SplitShell(joined)
		if err != nil || !reflect.DeepEqual(again, words) && !(len(again) == 0 && len(words) == 0) {
			t.Fatalf("SplitShell(%q) = %q; joined %q splits to %q, %v", s, words, joined, again, err)
		}
	})
}

// FuzzRewriteFStrings checks that the f-string rewrite never panics, keeps
// the line count, and leaves a source without f-strings as it is.
func FuzzRewriteFStrings(f *testing.F) {
	for _, s := range []string{`x = f"{a}"`, `f'{{}}{b!r}'`, "f\"\"\"{x\n}\"\"\"", `"f'{x}'"`, `# f"{"`, `f"{`, `f"{x:3}"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, err := rewriteFStrings("t.rules", []byte(s))
		if err != nil {
			return
		}
		if bytes.Count(out, []byte("\n")) != strings.Count(s, "\n") {
			t.Fatalf("line count changed: %q -> %q", s, out)
		}
		if !strings.Contains(s, `f"`) && !strings.Contains(s, `f'`) && string(out) != s {
			t.Fatalf("changed a source without f-strings: %q -> %q", s, out)
		}
	})
}
