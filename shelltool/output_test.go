package shelltool

import (
	"strings"
	"testing"
)

func TestOutputUTF8(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writes []string
		want   string
	}{
		{"ascii", []string{"hi\n", "there"}, "hi\nthere"},
		{"split character", []string{"a\xc3", "\xa9b"}, "aéb"},
		{"split 4-byte character", []string{"\xf0\x9f", "\x98", "\x80!"}, "😀!"},
		{"invalid bytes", []string{"\xff\x80ok"}, "\uFFFD\uFFFDok"},
		{"truncated at the end", []string{"x\xe2\x82"}, "x\uFFFD"},
		{"bad continuation", []string{"\xe2(", "x"}, "\uFFFD(x"},
	} {
		o := newOutput(MaxOutput)
		for _, w := range tc.writes {
			if n, err := o.Write([]byte(w)); n != len(w) || err != nil {
				t.Fatalf("%s: Write = %d, %v", tc.name, n, err)
			}
		}
		if got := o.String(); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestOutputCap(t *testing.T) {
	o := newOutput(MaxOutput)
	_, _ = o.Write([]byte(strings.Repeat("a", MaxOutput-1)))
	_, _ = o.Write([]byte("é")) // 2 bytes: would pass the cap, dropped whole
	_, _ = o.Write([]byte("zzz"))
	got := o.String()
	if len(got) != MaxOutput-1 || strings.Contains(got, "z") {
		t.Fatalf("len %d, want %d and nothing after the cap", len(got), MaxOutput-1)
	}
	o = newOutput(MaxOutput)
	_, _ = o.Write([]byte(strings.Repeat("b", 3*MaxOutput)))
	if got := o.String(); len(got) != MaxOutput {
		t.Fatalf("len %d, want exactly %d", len(got), MaxOutput)
	}
}
