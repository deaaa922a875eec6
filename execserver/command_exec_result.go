package execserver

import (
	"bytes"
	"io"
	"strconv"
	"unicode/utf8"
)

// resultPiece is how much escaped text execResult gathers before it writes.
const resultPiece = 64 << 10

// execResult is the final command/exec response, {"exitCode", "stdout",
// "stderr"}, written straight into the outgoing message (rpc.StreamedResult)
// instead of being built as strings and marshalled: a buffered run of
// tens of MiB is then held once, as the kept bytes, not four times over.
// The texts are the kept bytes as UTF-8, U+FFFD for each byte that is not
// part of a valid sequence.
type execResult struct {
	code           int
	stdout, stderr [][]byte // blocks that split no UTF-8 sequence
}

// WriteJSON implements rpc.StreamedResult.
func (r execResult) WriteJSON(w io.Writer) error {
	buf := make([]byte, 0, r.bufSize())
	buf = append(buf, `{"exitCode":`...)
	buf = strconv.AppendInt(buf, int64(r.code), 10)
	buf = append(buf, `,"stdout":"`...)
	var err error
	for i, blocks := range [][][]byte{r.stdout, r.stderr} {
		if i == 1 {
			buf = append(buf, `","stderr":"`...)
		}
		for _, b := range blocks {
			if buf, err = appendJSONText(w, buf, b); err != nil {
				return err
			}
		}
	}
	_, err = w.Write(append(buf, `"}`...))
	return err
}

// bufSize is the capacity WriteJSON starts with: a piece, or for a short
// result about its size (escapes beyond the slack grow the buffer), so that
// a run with little output does not allocate 64 KiB for its response.
func (r execResult) bufSize() int {
	n := 0
	for _, blocks := range [][][]byte{r.stdout, r.stderr} {
		for _, b := range blocks {
			n += len(b)
		}
	}
	if n >= resultPiece {
		return resultPiece + 16
	}
	return n + n/4 + 64
}

// MarshalJSON gives the same JSON in memory.
func (r execResult) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	err := r.WriteJSON(&b)
	return b.Bytes(), err
}

// plainJSON marks the bytes that stand for themselves inside a JSON
// string: printable ASCII other than the quote and the backslash.
var plainJSON = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendJSONText appends b escaped as the inside of a JSON string to buf,
// writing buf to w and reusing it whenever it holds resultPiece bytes.
func appendJSONText(w io.Writer, buf, b []byte) ([]byte, error) {
	const hex = "0123456789abcdef"
	for len(b) > 0 {
		if len(buf) >= resultPiece {
			if _, err := w.Write(buf); err != nil {
				return buf, err
			}
			buf = buf[:0]
		}
		n, limit := 0, min(len(b), resultPiece)
		for n < limit && plainJSON[b[n]] {
			n++
		}
		if n > 0 {
			buf, b = append(buf, b[:n]...), b[n:]
			continue
		}
		c := b[0]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(b)
			if r == utf8.RuneError && size == 1 {
				buf = append(buf, "\uFFFD"...)
			} else {
				buf = append(buf, b[:size]...)
			}
			b = b[size:]
			continue
		}
		switch c {
		case '"', '\\':
			buf = append(buf, '\\', c)
		case '\n':
			buf = append(buf, `\n`...)
		case '\r':
			buf = append(buf, `\r`...)
		case '\t':
			buf = append(buf, `\t`...)
		default:
			buf = append(buf, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		b = b[1:]
	}
	return buf, nil
}
