package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// decodeWhole is the text of b decoded at once: UTF-8, one U+FFFD for
// each byte that is not part of a valid sequence (docs/protocol.md §12.4).
func decodeWhole(b []byte) string { return string([]rune(string(b))) }

// execText runs p with command/exec and returns its stdout text.
func execText(t *testing.T, c *cx, p map[string]any) string {
	t.Helper()
	var r struct{ Stdout, Stderr string }
	if err := json.Unmarshal([]byte(result(t, c.call("command/exec", p))), &r); err != nil {
		t.Fatal(err)
	}
	return r.Stdout
}

// firstDiff describes where got and want first differ, in bytes.
func firstDiff(got, want string) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	return fmt.Sprintf("%d bytes, want %d; first difference at byte %d: got %q, want %q",
		len(got), len(want), i, got[i:min(len(got), i+12)], want[i:min(len(want), i+12)])
}

// splitAt16K writes the first 20000 bytes of "é€é€…" (5 bytes a unit, no
// newline, so that a PTY passes them unchanged) in two writes: 16384
// bytes, a pause in which the server reads them all, then the rest. The
// server's first output block holds 16 KiB, so the read fills it exactly
// and ends inside the `€` at bytes 16382–16384.
const splitAt16K = `yes 'é€' | tr -d '\n' | head -c 16384; sleep 0.3; ` +
	`yes 'é€' | tr -d '\n' | head -c 20000 | tail -c +16385`

// TestCommandExecSplitCharacterAtBlockEnd is failure 7 of issue 18: a
// buffered command/exec whose read exactly filled an output block and
// ended inside a character answered U+FFFD for the character cut by the
// block (first difference at byte 16,382), since the text was decoded
// block by block. Streamed deltas (pipes and a PTY) are checked too, and the cap
// cutting the same character: the text then ends before it, never with
// half of it decoded as U+FFFD.
func TestCommandExecSplitCharacterAtBlockEnd(t *testing.T) {
	t.Parallel()
	unit := []byte("é€")
	var all []byte
	for len(all) < 20000 {
		all = append(all, unit...)
	}
	all = all[:20000]
	forEachTransport(t, func(t *testing.T, c *cx) {
		if got, want := execText(t, c, execParams(splitAt16K)), decodeWhole(all); got != want {
			t.Errorf("buffered: %s", firstDiff(got, want))
		}
		// The cap cuts the `€` at 16382–16384 after its first byte: the
		// text stops after the `é` before it.
		got := execText(t, c, execParams(splitAt16K, "outputBytesCap", 16383))
		if want := decodeWhole(all[:16382]); got != want {
			t.Errorf("buffered with cap 16383: %s", firstDiff(got, want))
		}
		// Streamed deltas are the bytes, up to the cap exactly.
		for _, tc := range []struct {
			cap  any
			want []byte
			tty  bool
		}{{nil, all, false}, {16383, all[:16383], false}, {nil, all, true}} {
			id := fmt.Sprintf("s%v-%v", tc.cap, tc.tty)
			p := execParams(splitAt16K, "processId", id, "streamStdoutStderr", true, "tty", tc.tty)
			if tc.cap != nil {
				p["outputBytesCap"] = tc.cap
			}
			if out := execText(t, c, p); out != "" {
				t.Errorf("streamed: stdout %q in the response", out)
			}
			if got, _ := c.deltas(id, "stdout"); got != string(tc.want) {
				t.Errorf("streamed, cap %v, tty %v: %s", tc.cap, tc.tty, firstDiff(got, string(tc.want)))
			}
		}
	})
}

// TestCommandExecOutputMatchesBytes is the soak of failure 7 as a
// property: random text (1-, 2-, 3- and 4-byte characters, invalid bytes,
// truncated sequences) written in pieces, each flushed before the next,
// comes back from a buffered command/exec as the whole-buffer decode of
// the bytes, and from a streamed one as the bytes. Pieces of 16 KiB make
// reads end where the server's output blocks do (16, 32 and 64 KiB); the
// data is shifted by 0–3 bytes so that characters straddle those ends.
func TestCommandExecOutputMatchesBytes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(18, 7))
	pieces := []string{"a", "\n", "é", "€", "😀", "\xff", "\xe2\x82", "\xf0\x9f\x98", "\xc3", "\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80"}
	var base []byte
	for len(base) < 70000 {
		base = append(base, pieces[rng.IntN(len(pieces))]...)
	}
	// Characters across the block ends whatever the shift.
	copy(base[16381:], "😀")
	copy(base[32766:], "€")
	copy(base[65535:], "é")
	type run struct{ shift, piece int }
	runs := []run{{0, 16384}, {1, 16384}, {2, 16384}, {3, 16384}, {1, 4096}, {2, 8191}}
	for _, r := range runs {
		data := append([]byte(strings.Repeat("x", r.shift)), base...)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprint(r.shift)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	forEachTransport(t, func(t *testing.T, c *cx) {
		for _, r := range runs {
			file := filepath.Join(dir, fmt.Sprint(r.shift))
			data, _ := os.ReadFile(file)
			script := fmt.Sprintf(`i=0; while [ $i -lt %d ]; do tail -c +$((i+1)) %s | head -c %d; sleep 0.01; i=$((i+%d)); done`, len(data), file, r.piece, r.piece)
			if got, want := execText(t, c, execParams(script)), decodeWhole(data); got != want {
				t.Errorf("buffered, shift %d, pieces of %d: %s", r.shift, r.piece, firstDiff(got, want))
			}
			id := fmt.Sprintf("p%d-%d", r.shift, r.piece)
			execText(t, c, execParams(script, "processId", id, "streamStdoutStderr", true))
			if got, _ := c.deltas(id, "stdout"); got != string(data) {
				t.Errorf("streamed, shift %d, pieces of %d: %s", r.shift, r.piece, firstDiff(got, string(data)))
			}
		}
	})
}
