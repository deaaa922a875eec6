package agenttool_test

import (
	"testing"

	"github.com/codexec/codex/unifiedexec/agenttool"
)

func TestFormattedTruncateGolden(t *testing.T) {
	const long = "this is an example of a long output that should be truncated"
	const twoLines = long + "\nalso some other line"
	tests := []struct {
		in     string
		policy agenttool.TruncationPolicy
		want   string
	}{
		{"example output", agenttool.BytesPolicy(1), "Total output lines: 1\n\n…13 chars truncated…t"},
		{"example output", agenttool.TokensPolicy(1), "Total output lines: 1\n\nex…3 tokens truncated…ut"},
		{long, agenttool.TokensPolicy(5), "Total output lines: 1\n\nthis is an…10 tokens truncated… truncated"},
		{long, agenttool.BytesPolicy(30), "Total output lines: 1\n\nthis is an exam…30 chars truncated…ld be truncated"},
		{twoLines, agenttool.BytesPolicy(30), "Total output lines: 2\n\nthis is an exam…51 chars truncated…some other line"},
		{twoLines, agenttool.TokensPolicy(10), "Total output lines: 2\n\nthis is an example o…11 tokens truncated…also some other line"},
		{"example output", agenttool.TokensPolicy(10), "example output"},
		{"example output", agenttool.BytesPolicy(20), "example output"},
	}
	for _, tt := range tests {
		if got := agenttool.FormattedTruncate(tt.in, tt.policy); got != tt.want {
			t.Errorf("FormattedTruncate(%q, %+v)\n got %q\nwant %q", tt.in, tt.policy, got, tt.want)
		}
	}
}

func TestTruncateUTF8Boundaries(t *testing.T) {
	in := "😀😀😀😀😀😀😀😀😀😀\nsecond line with text\n"
	if got, want := agenttool.Truncate(in, agenttool.BytesPolicy(20)), "😀😀…21 chars truncated…with text\n"; got != want {
		t.Fatalf("got %q want %q", got, want)
	}
	if got := agenttool.Truncate("abcdefgh", agenttool.TokensPolicy(0)); got != "…2 tokens truncated…" {
		t.Fatalf("zero budget: %q", got)
	}
}

func TestApproxTokens(t *testing.T) {
	for n, want := range map[int]int{-1: 0, 0: 0, 5: 2, 8: 2, 9: 3} {
		if got := agenttool.ApproxTokensFromBytes(n); got != want {
			t.Errorf("ApproxTokensFromBytes(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestLossyUTF8(t *testing.T) {
	tests := map[string]string{
		"plain":             "plain",
		"a\xffb":            "a\uFFFDb",
		"\xe2\x82":          "\uFFFD",
		"\xe2\x82a":         "\uFFFDa",
		"\xf0\x9f\x98\x80x": "😀x",
		"\xed\xa0\x80":      "\uFFFD\uFFFD\uFFFD",
	}
	for in, want := range tests {
		if got := agenttool.LossyUTF8([]byte(in)); got != want {
			t.Errorf("LossyUTF8(%q) = %q, want %q", in, got, want)
		}
	}
}
