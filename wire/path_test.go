package wire_test

import (
	"testing"

	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wire"
)

func TestParsePath(t *testing.T) {
	cases := []struct {
		in, native string
		uri        bool
		code       int
	}{
		{"file:///tmp/with%20space.txt", "/tmp/with space.txt", true, 0},
		{"file://localhost/a/../b", "/b", true, 0},
		{"/abs/./x/../y", "/abs/y", false, 0},
		{"/tmp/with%20space", "/tmp/with%20space", false, 0},
		{"tmp/x", "", false, -32602},
		{"x", "", false, -32602},
		{"http://h/x", "", false, -32602},
		{"file://server/share/a.txt", "", false, -32600},
	}
	for _, tc := range cases {
		p, err := wire.ParsePath(tc.in)
		if tc.code != 0 {
			we, ok := err.(*rpc.Error)
			if !ok || we.Code != tc.code {
				t.Errorf("%s: %v, want code %d", tc.in, err, tc.code)
			}
			continue
		}
		if err != nil || p.Native != tc.native || p.URI != tc.uri {
			t.Errorf("%s: %+v %v", tc.in, p, err)
		}
	}
	if got := wire.FileURI("/tmp/a b%/é"); got != "file:///tmp/a%20b%25/%C3%A9" {
		t.Errorf("FileURI: %s", got)
	}
	// The names and their URIs as the reference's fs/walk listed them
	// (e2e/testdata/walk_record.py, case "names-percent-encoding").
	for name, want := range map[string]string{
		"amp&": "amp&", "ap'": "ap'", "at@": "at@", "br[]": "br[]", "bs\\": "bs%5C", "bt`": "bt%60",
		"ca^": "ca^", "col:": "col:", "com,": "com,", "cu{}": "cu%7B%7D", "del\x7f": "del%7F", "dol$": "dol$",
		"dq\"": "dq%22", "eq=": "eq=", "ex!": "ex!", "hash#": "hash%23", "lt<>": "lt%3C%3E", "par()": "par()",
		"pct%41": "pct%2541", "pi|": "pi|", "plus+": "plus+", "q?": "q%3F", "semi;": "semi;", "sp ace": "sp%20ace",
		"st*": "st*", "tl~": "tl~", "é": "%C3%A9", "c\x01": "c%01", "trail ": "trail%20",
		"a\xff": "a%FF", // [ours]: the reference lists no name that is not UTF-8 (docs/protocol.md §6.11.2)
	} {
		if got := wire.FileURI("/n/" + name); got != "file:///n/"+want {
			t.Errorf("FileURI(%q) = %s, want file:///n/%s", name, got, want)
		}
		if back, err := wire.ParsePath(wire.FileURI("/n/" + name)); err != nil || back.Native != "/n/"+name {
			t.Errorf("ParsePath(FileURI(%q)) = %q, %v", name, back.Native, err)
		}
	}
	p, _ := wire.ParsePath("file:///x/y")
	if p.WithNative("/z").String() != "file:///z" {
		t.Errorf("WithNative keeps the URI form")
	}
}

func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"file:///a", "/a/b", "x", "file://h/x", "file:///%zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := wire.ParsePath(s)
		if err != nil {
			if _, ok := err.(*rpc.Error); !ok {
				t.Fatalf("error %v is not a wire error", err)
			}
			return
		}
		if len(p.Native) == 0 || p.Native[0] != '/' {
			t.Fatalf("%q parsed to a non-absolute path %q", s, p.Native)
		}
		if p.URI {
			back, err := wire.ParsePath(p.String())
			if err != nil || back.Native != p.Native {
				t.Fatalf("%q: URI %q does not round-trip: %v", s, p.String(), err)
			}
		}
	})
}
