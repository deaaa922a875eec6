package execserver

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/codexec/codex/proc"
	"github.com/codexec/codex/wire"
)

// textSamples are texts with every kind of sequence a read or block end can
// cut: 2-, 3- and 4-byte characters, a literal U+FFFD, invalid bytes,
// truncated sequences, overlong and surrogate encodings.
var textSamples = []string{
	"é", "€", "😀", "\uFFFD",
	"aé€😀b",
	"\xff", "\xe2\x82", "\xf0\x9f\x98", "\xc3", "\x80\x80",
	"\xe2\x82A", "\xf0\x9f\x98é", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe0\x80\xaf",
	"é\xff€\xe2\x82😀\xf0\x9f\x98\xc3",
}

// wholeText is the expected text: the whole output decoded at once, U+FFFD
// for each byte outside a valid sequence, keeping only the characters that
// end within the first limit bytes (limit < 0: no cap).
func wholeText(all []byte, limit int) string {
	var sb strings.Builder
	for i := 0; i < len(all); {
		r, size := utf8.DecodeRune(all[i:])
		if limit >= 0 && i+size > limit {
			break
		}
		if r == utf8.RuneError && size == 1 {
			sb.WriteRune(utf8.RuneError)
		} else {
			sb.Write(all[i : i+size])
		}
		i += size
	}
	return sb.String()
}

// runReads feeds all to an execOutput in the given reads (lengths; the
// rest in one last read), its smallest output block minBlock bytes (0: the
// real 16 KiB), and returns the buffered text, or with stream the
// concatenated deltas and the last delta's capReached.
func runReads(t *testing.T, all []byte, reads []int, stream bool, limit int64, minBlock int) (string, bool) {
	t.Helper()
	var deltas bytes.Buffer
	capReached := false
	o := newExecOutputTo(func(d wire.CommandExecOutputDelta) {
		b, err := base64.StdEncoding.DecodeString(d.DeltaBase64)
		if err != nil {
			t.Fatal(err)
		}
		deltas.Write(b)
		capReached = d.CapReached
	}, "p", stream, limit)
	o.outs[0].minBlock = minBlock
	rest := all
	for _, n := range reads {
		if n = min(n, len(rest)); n == 0 {
			continue // a read returns at least one byte
		}
		o.add(proc.StreamStdout, append([]byte(nil), rest[:n]...))
		rest = rest[n:]
	}
	if len(rest) > 0 {
		o.add(proc.StreamStdout, append([]byte(nil), rest...))
	}
	if stream {
		return deltas.String(), capReached
	}
	var b bytes.Buffer
	if err := o.result(0).WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var r wire.CommandExecResult
	if err := json.Unmarshal(b.Bytes(), &r); err != nil {
		t.Fatalf("%v in %.200s", err, b.Bytes())
	}
	return r.Stdout, false
}

// TestCommandExecTextEveryBlockSplit: blocks that end anywhere — inside a
// character of any length, between the bytes of an invalid sequence, in
// one-byte blocks — decode as the concatenation does.
func TestCommandExecTextEveryBlockSplit(t *testing.T) {
	for _, s := range textSamples {
		in := "<" + s + s + ">"
		want := wholeText([]byte(in), -1)
		for i := 0; i <= len(in); i++ {
			for j := i; j <= len(in); j++ {
				blocks := [][]byte{[]byte(in[:i]), []byte(in[i:j]), []byte(in[j:])}
				if got := resultText(t, blocks); got != want {
					t.Fatalf("%q split at %d and %d: got %q, want %q", in, i, j, got, want)
				}
			}
		}
		var ones [][]byte
		for k := range len(in) {
			ones = append(ones, []byte{in[k]})
		}
		if got := resultText(t, ones); got != want {
			t.Fatalf("%q in one-byte blocks: got %q, want %q", in, got, want)
		}
	}
}

// resultText is the stdout text of a result made of blocks.
func resultText(t *testing.T, blocks [][]byte) string {
	t.Helper()
	b, err := execResult{stdout: blocks}.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var r wire.CommandExecResult
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r.Stdout
}

// TestCommandExecTextEveryReadSplit: output read in two reads split at
// every point, into blocks of 8 bytes and more (so that block ends fall
// inside the sample too, as the real 16 KiB ones do in FuzzCommandExecOutput's
// seeds), buffered and streamed, with no cap and with every cap around
// the sample: the buffered text is the whole decode up to the last
// character that ends within the cap (a character the cap cuts is left
// out whole), the deltas are the first cap bytes, flagged capReached.
func TestCommandExecTextEveryReadSplit(t *testing.T) {
	for _, s := range textSamples {
		for pad := range 8 {
			all := []byte(strings.Repeat("x", pad) + s + s)
			for split := 0; split <= len(all); split++ {
				for limit := -1; limit <= len(all)+1; limit++ {
					checkReads(t, all, []int{split}, int64(limit), 8)
				}
			}
		}
	}
}

// checkReads compares the buffered and streamed outputs of all, read in
// reads into blocks of at least minBlock bytes, with the model under the
// cap limit.
func checkReads(t *testing.T, all []byte, reads []int, limit int64, minBlock int) {
	t.Helper()
	name := fmt.Sprintf("%q (%d bytes) read as %v into blocks from %d, cap %d", all[max(0, len(all)-12):], len(all), reads, minBlock, limit)
	if got, want := must(runReads(t, all, reads, false, limit, minBlock)), wholeText(all, int(limit)); got != want {
		t.Fatalf("%s: buffered %s", name, diffAt(got, want))
	}
	wantBytes := all
	if limit >= 0 && int(limit) < len(all) {
		wantBytes = all[:limit]
	}
	got, reached := runReads(t, all, reads, true, limit, minBlock)
	if got != string(wantBytes) {
		t.Fatalf("%s: streamed %s", name, diffAt(got, string(wantBytes)))
	}
	// The last delta is flagged when the kept bytes reach the cap; a
	// silent stream has no delta.
	if wantReached := limit >= 0 && int(limit) <= len(all) && len(all) > 0; reached != wantReached {
		t.Fatalf("%s: capReached %v, want %v", name, reached, wantReached)
	}
}

func must(s string, _ bool) string { return s }

// diffAt shows where got first differs from want.
func diffAt(got, want string) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	return fmt.Sprintf("%d bytes, want %d; from byte %d got %q, want %q", len(got), len(want), i, got[i:min(len(got), i+12)], want[i:min(len(want), i+12)])
}

// FuzzCommandExecOutput compares what command/exec answers with the bytes
// a command wrote, for any output, any reads and any cap: the buffered
// text is their whole decode (up to the last character within the cap),
// the streamed deltas are the bytes (up to the cap). Its seeds, run by
// `go test`, include failure 7 of issue 18: a read that fills the first
// 16 KiB block and ends inside a `€`.
func FuzzCommandExecOutput(f *testing.F) {
	yes := bytes.Repeat([]byte("é€"), 4000)[:20000]
	f.Add(yes, []byte{0x40, 0x00, 0x40, 0x00}, int32(-1), uint8(0))    // reads of 16384, then the rest
	f.Add(yes, []byte{0x40, 0x00, 0x40, 0x00}, int32(16383), uint8(0)) // the cap cuts the same `€`
	f.Add([]byte("a\xe2\x82\xacb\xff\xf0\x9f\x98\x80"), []byte{0, 2, 0, 1, 0, 3}, int32(4), uint8(3))
	f.Add([]byte("\xf0\x9f\x98"), []byte{0, 1}, int32(-1), uint8(1))
	f.Add(bytes.Repeat([]byte("😀"), 10000), []byte{0x3f, 0xff, 0x00, 0x01, 0x40, 0x00}, int32(32767), uint8(0))
	f.Fuzz(func(t *testing.T, all []byte, split []byte, limit int32, block uint8) {
		var reads []int
		for i := 0; i+1 < len(split); i += 2 {
			reads = append(reads, int(split[i])<<8|int(split[i+1]))
		}
		if limit < -1 {
			limit = -1
		}
		checkReads(t, all, reads, int64(limit), int(block)) // block 0: 16 KiB
	})
}
