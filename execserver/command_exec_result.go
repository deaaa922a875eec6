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
// part of a valid sequence, decoded as one text whatever the blocks.
type execResult struct {
	code           int
	stdout, stderr [][]byte // blocks, which may end inside a character
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
		if buf, err = appendJSONBlocks(w, buf, blocks); err != nil {
			return err
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

// appendJSONBlocks appends the blocks, one text cut anywhere, escaped as
// the inside of a JSON string: a character that a block's end cuts is
// decoded whole, with its bytes from the blocks that follow, so the text
// is the decode of the blocks' concatenation (docs/protocol.md §12.4).
func appendJSONBlocks(w io.Writer, buf []byte, blocks [][]byte) ([]byte, error) {
	skip := 0 // bytes at the start of the next blocks decoded already
	for i, b := range blocks {
		k := min(skip, len(b))
		b, skip = b[k:], skip-k
		tail, err := []byte(nil), error(nil)
		if buf, tail, err = appendJSONText(w, buf, b, i == len(blocks)-1); err != nil {
			return buf, err
		}
		for len(tail) > 0 { // an unfinished character at the block's end
			var win [utf8.UTFMax]byte
			n := copy(win[:], tail)
			for j := i + 1; j < len(blocks) && n < len(win); j++ {
				n += copy(win[n:], blocks[j])
			}
			r, size := utf8.DecodeRune(win[:n])
			buf = appendRune(buf, win[:size], r)
			if size < len(tail) {
				tail = tail[size:]
				continue
			}
			skip, tail = size-len(tail), nil
		}
	}
	return buf, nil
}

// appendRune appends the decoded sequence enc (rune r): itself when valid,
// U+FFFD for an invalid byte.
func appendRune(buf, enc []byte, r rune) []byte {
	if r == utf8.RuneError && len(enc) == 1 {
		return append(buf, "\uFFFD"...)
	}
	return append(buf, enc...)
}

// appendJSONText appends b escaped as the inside of a JSON string to buf,
// writing buf to w and reusing it whenever it holds resultPiece bytes.
// Unless last, a character that b's end leaves unfinished is not decoded
// but returned as tail, for the caller to complete with what follows.
func appendJSONText(w io.Writer, buf, b []byte, last bool) (out, tail []byte, err error) {
	const hex = "0123456789abcdef"
	for len(b) > 0 {
		if len(buf) >= resultPiece {
			if _, err := w.Write(buf); err != nil {
				return buf, nil, err
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
			if !last && !utf8.FullRune(b) {
				return buf, b, nil
			}
			r, size := utf8.DecodeRune(b)
			buf, b = appendRune(buf, b[:size], r), b[size:]
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
	return buf, nil, nil
}
