package shelltool

import (
	"io"
	"strings"
	"sync"
	"unicode/utf8"
)

// MaxOutput is the cap on a call's output, in bytes of UTF-8 text
// (docs/shell-tool.md §3.3: 1 MiB).
const MaxOutput = 1 << 20

// output is the text of a call's combined stdout and stderr, in arrival
// order: bytes decoded as UTF-8 with U+FFFD for invalid sequences, a
// character split across writes decoded whole, and everything after the
// first MaxOutput bytes of text dropped (never half a character).
// Writes never fail, so the command is never blocked by a full output.
// Safe for concurrent use.
type output struct {
	max     int
	mu      sync.Mutex
	text    strings.Builder // guarded by mu
	pending []byte          // guarded by mu: an incomplete character at the end
	full    bool            // guarded by mu: the cap was reached
}

func newOutput(max int) *output { return &output{max: max} }

// Write implements io.Writer.
func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	data := p
	if len(o.pending) > 0 {
		data = append(o.pending, p...)
		o.pending = nil
	}
	for i := 0; i < len(data) && !o.full; {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size <= 1 && !utf8.FullRune(data[i:]) {
			o.pending = append([]byte(nil), data[i:]...)
			break
		}
		if r == utf8.RuneError && size <= 1 {
			o.add("\uFFFD")
		} else {
			o.add(string(data[i : i+size]))
		}
		i += max(size, 1)
	}
	return len(p), nil
}

// add appends one character unless it would pass the cap. Called with mu
// held.
func (o *output) add(s string) {
	if o.text.Len()+len(s) > o.max {
		o.full = true
		return
	}
	o.text.WriteString(s)
}

// String returns the text so far; an incomplete character left at the end
// counts as one U+FFFD.
func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := o.text.String()
	if len(o.pending) > 0 && !o.full && len(s)+len("\uFFFD") <= o.max {
		s += "\uFFFD"
	}
	return s
}

// collect copies r into o until r ends, then closes done.
func collect(r io.Reader, o *output, done chan<- struct{}) {
	defer close(done)
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			_, _ = o.Write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}
