package wire

import (
	"strings"
	"testing"
)

// TestDecodeWriteBlockEscapes: a handle id with escaped quotes and
// backslashes, before and after a long chunk, decodes as encoding/json
// would read it; the chunk's base64 is decoded.
func TestDecodeWriteBlockEscapes(t *testing.T) {
	long := strings.Repeat("QUJD", 5000)
	for _, tc := range []struct{ raw, id string }{
		{`{"handleId":"a\"b\\","offset":7,"chunk":"` + long + `"}`, `a"b\`},
		{`{"chunk":"` + long + `","handleId":"\\\"","offset":7}`, `\"`},
		{`{"x":"\\\\\"}","chunk":"` + long + `","offset":7,"handleId":"h\u00e9"}`, "hé"},
	} {
		p, err := DecodeWriteBlock([]byte(tc.raw), nil)
		if err != nil {
			t.Fatalf("%.60s: %v", tc.raw, err)
		}
		if p.HandleID != tc.id || p.Offset != 7 || len(p.Chunk) != 15000 || string(p.Chunk[:3]) != "ABC" {
			t.Errorf("%.60s: id %q offset %d chunk %d bytes", tc.raw, p.HandleID, p.Offset, len(p.Chunk))
		}
	}
}

// TestBase64ErrorTexts holds base64Error to the texts the reference 0.169.0
// gave for these chunks (probed by hand; the e2e replay holds more).
func TestBase64ErrorTexts(t *testing.T) {
	for in, want := range map[string]string{
		"eHl6eA=":   "Invalid padding",
		"eHl6e":     "Invalid input length: 5",
		"eHl6eA===": "Invalid symbol 61, offset 6.",
		"eHl6eA=\r": "Invalid symbol 61, offset 6.",
		`QUJD\/x==`: "Invalid symbol 92, offset 4.",
		"eA==":      "",
	} {
		_, got := DecodeBase64([]byte(in))
		if got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}
