package rpc

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"
)

// randomLines builds n lines of random sizes (up to 700 KiB, many small,
// some blank, "\r\n" or "\n" endings) and the messages a framer must
// return for them; the last line has no newline when cut is set.
func randomLines(rng *rand.Rand, n int, cut bool) (string, []string) {
	var in strings.Builder
	var want []string
	for i := range n {
		size := rng.IntN(64)
		switch rng.IntN(4) {
		case 0:
			size = rng.IntN(700 << 10)
		case 1:
			size = 300<<10 + rng.IntN(100<<10)
		}
		line := strings.Repeat(string(rune('a'+i%26)), size)
		if size > 2 {
			line = fmt.Sprintf("%d", i) + line[2:]
		}
		in.WriteString(line)
		if strings.TrimSpace(line) != "" {
			want = append(want, line)
		}
		if i < n-1 || !cut {
			in.WriteString([]string{"\n", "\r\n"}[rng.IntN(2)])
		}
	}
	return in.String(), want
}

// TestLentLines: the lent line reader returns the same messages as the
// copying one, whatever the sizes of the reads underneath (one byte,
// halves, whole), with a last line cut by EOF or not, and each line stays
// intact until the next Read.
func TestLentLines(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 5))
	readers := map[string]func(io.Reader) io.Reader{
		"whole": func(r io.Reader) io.Reader { return r },
		"half":  iotest.HalfReader,
		"one":   iotest.OneByteReader,
	}
	for round := range 6 {
		in, want := randomLines(rng, 40, round%2 == 1)
		for name, wrap := range readers {
			if name == "one" && round > 1 {
				continue // slow; two rounds suffice
			}
			for _, lent := range []bool{false, true} {
				f := NewStdioFramer(wrap(strings.NewReader(in)), io.Discard, nil, "test", 1<<20).(*stdioFramer)
				if lent {
					f.lend()
				}
				for i, w := range want {
					got, err := f.Read(context.Background())
					if err != nil || string(got) != w {
						t.Fatalf("round %d %s lent=%v line %d: %d bytes, %v; want %d bytes", round, name, lent, i, len(got), err, len(w))
					}
				}
				if got, err := f.Read(context.Background()); err != io.EOF {
					t.Fatalf("round %d %s lent=%v: after the last line %d bytes, %v; want io.EOF", round, name, lent, len(got), err)
				}
			}
		}
	}
}

// TestLentLinesTooLarge: a lent line longer than the limit gives
// ErrTooLarge, as the copying reader does, without reading it whole.
func TestLentLinesTooLarge(t *testing.T) {
	for _, lent := range []bool{false, true} {
		in := "small\n" + strings.Repeat("x", 3<<20) + "\n"
		f := NewStdioFramer(strings.NewReader(in), io.Discard, nil, "test", 1<<20).(*stdioFramer)
		if lent {
			f.lend()
		}
		if got, err := f.Read(context.Background()); string(got) != "small" || err != nil {
			t.Fatalf("lent=%v: first line %q, %v", lent, got, err)
		}
		if _, err := f.Read(context.Background()); err != ErrTooLarge {
			t.Fatalf("lent=%v: oversize line: %v, want ErrTooLarge", lent, err)
		}
	}
}

// TestLentLinesMemory: after a burst of large lines, small lines let the
// reader drop its large buffer.
func TestLentLinesMemory(t *testing.T) {
	var in bytes.Buffer
	for range 8 {
		in.WriteString(strings.Repeat("b", 400<<10) + "\n")
	}
	for range 200 {
		in.WriteString("{}\n")
	}
	f := NewStdioFramer(&in, io.Discard, nil, "test", 1<<20).(*stdioFramer)
	f.lend()
	peak := 0
	for {
		if _, err := f.Read(context.Background()); err != nil {
			break
		}
		peak = max(peak, len(f.lb.buf))
	}
	if peak < 4*(400<<10) || len(f.lb.buf) > 4*minLineRead {
		t.Fatalf("buffer: peak %d, at the end %d; want a peak of 4 lines and at most %d at the end", peak, len(f.lb.buf), 4*minLineRead)
	}
}
