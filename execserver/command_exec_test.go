package execserver

import (
	"testing"
)

func TestDecodeDeltaMessages(t *testing.T) {
	for in, want := range map[string]string{
		"!":    "invalid deltaBase64: Invalid symbol 33, offset 0.",
		"a":    "invalid deltaBase64: Invalid input length: 1",
		"aR==": "invalid deltaBase64: Invalid last symbol 82, offset 1.",
		"aGk":  "invalid deltaBase64: Invalid padding",
		"aGk=": "",
		"":     "",
	} {
		got := ""
		if _, err := decodeDelta(in); err != nil {
			got = err.Message
		}
		if got != want {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
}

func TestValidUTF8(t *testing.T) {
	for in, want := range map[string]string{
		"plain":          "plain",
		"a\xffb":         "a\uFFFDb",
		"\xc3\xa9\xc3":   "é\uFFFD",
		"nul\x00kept":    "nul\x00kept",
		"\xef\xbb\xbfok": "\uFEFFok",
	} {
		if got := validUTF8([]byte(in)); got != want {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
}
