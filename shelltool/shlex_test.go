package shelltool

import "testing"

// TestShellJoin: examples of the reference's joining (docs/shell-tool.md §7.6).
func TestShellJoin(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"a b", `'a b'`},
		{"it's", `"it's"`},
		{"x$y", `'x$y'`},
		{"plain", `plain`},
		{"-n", `-n`},
		{"a=b", `'a=b'`},
		{"a^b", `a'^b'`},
		{`back\slash`, `"back\\slash"`},
		{"", `''`},
		{"/etc/hostname", `/etc/hostname`},
		{`it's $HOME`, `"it's \$HOME"`},
	} {
		if got := shellJoin([]string{tc.in}); got != tc.want {
			t.Errorf("%q: got %s, want %s", tc.in, got, tc.want)
		}
	}
	if got := shellJoin([]string{"init", ".", "a b"}); got != `init . 'a b'` {
		t.Errorf("join: %s", got)
	}
}
