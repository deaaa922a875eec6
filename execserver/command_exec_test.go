package execserver

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/codexec/codex/wire"
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

// TestCommandExecResultJSON: the streamed result decodes to the kept
// bytes as UTF-8, U+FFFD for each invalid byte, with every escape JSON
// needs.
func TestCommandExecResultJSON(t *testing.T) {
	big := make([]byte, 3*resultPiece+17)
	rand.New(rand.NewSource(1)).Read(big)
	for _, in := range []string{
		"", "plain", "a\xffb", "\xc3\xa9\xc3", "nul\x00kept", "\xef\xbb\xbfok", "q\"b\\s/<>&\u2028",
		"\n\r\t\b\f\x01\x1f\x7f", strings.Repeat("é", resultPiece), strings.Repeat("€", resultPiece), "x" + strings.Repeat("\U0001F600", resultPiece), string(big),
		strings.Repeat("\x01", resultPiece/3),
	} {
		var out, errs capped
		for p := in; len(p) > 0; { // in reads of 1 to 40000 bytes, as a pipe delivers them
			n := min(len(p), 1+len(p)*7%40000)
			out.keep([]byte(p[:n]))
			p = p[n:]
		}
		errs.keep([]byte(in + "e"))
		r := execResult{code: -1, stdout: out.blocks, stderr: errs.blocks}
		var b bytes.Buffer
		if err := r.WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		var got wire.CommandExecResult
		if err := json.Unmarshal(b.Bytes(), &got); err != nil {
			t.Fatalf("%.40q: %v in %.200s", in, err, b.Bytes())
		}
		if got != (wire.CommandExecResult{ExitCode: -1, Stdout: replaceInvalid(in), Stderr: replaceInvalid(in + "e")}) {
			t.Errorf("%.40q: got %.80q", in, got.Stdout)
		}
	}
}

// replaceInvalid is the expected text: U+FFFD for each byte outside a
// valid UTF-8 sequence.
func replaceInvalid(s string) string {
	var sb strings.Builder
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		if r == utf8.RuneError && size == 1 {
			sb.WriteRune(utf8.RuneError)
		} else {
			sb.WriteString(s[:size])
		}
		s = s[size:]
	}
	return sb.String()
}

// BenchmarkCommandExecResultEmpty writes the result of a run without
// output (the #14 response).
func BenchmarkCommandExecResultEmpty(b *testing.B) {
	b.ReportAllocs()
	var w bytes.Buffer
	for b.Loop() {
		w.Reset()
		if err := (execResult{}).WriteJSON(&w); err != nil {
			b.Fatal(err)
		}
	}
}
