package execserver

import "unicode/utf8"

// capCut is the character a buffered stream's cap may cut in two
// (docs/protocol.md §12.4): the text keeps the characters that end
// within the first cap bytes, so a character that starts before the cap
// and ends after it is left out whole, never decoded as U+FFFD for its
// first bytes. Whether the bytes at the end of the kept ones are such a
// character depends on the next up to three bytes of output, which may
// come in later reads; until they do (or the output ends) the decision
// stays open and the bytes stay kept.
type capCut struct {
	tail  []byte // the kept bytes that start an unfinished character; nil: none
	after []byte // the bytes read after the cap so far (at most 3)
}

// open looks at the end of the kept bytes once the cap is reached: a lead
// byte among the last three that more bytes could complete starts a
// character the cap may cut.
func (c *capCut) open(blocks [][]byte) {
	var last [utf8.UTFMax - 1]byte
	n := 0
	for i := len(blocks) - 1; i >= 0 && n < len(last); i-- {
		b := blocks[i]
		k := min(len(b), len(last)-n)
		copy(last[len(last)-n-k:], b[len(b)-k:])
		n += k
	}
	end := last[len(last)-n:]
	for i := len(end) - 1; i >= 0; i-- {
		if utf8.RuneStart(end[i]) {
			if end[i] >= 0xC0 && !utf8.FullRune(end[i:]) {
				c.tail = append([]byte(nil), end[i:]...)
			}
			return
		}
	}
}

// settleCut takes b, output read after the cap, into the open decision;
// once the bytes after the cap decide the character, a cut one is
// removed from the kept bytes.
func (st *capped) settleCut(b []byte) {
	c := &st.cut
	if c.tail == nil || len(b) == 0 {
		return
	}
	c.after = append(c.after, b[:min(len(b), utf8.UTFMax-1-len(c.after))]...)
	w := append(append([]byte(nil), c.tail...), c.after...)
	if !utf8.FullRune(w) {
		return
	}
	// A size beyond the tail is a valid character across the cap (an
	// invalid sequence decodes one byte at a time).
	if _, size := utf8.DecodeRune(w); size > len(c.tail) {
		st.trim(len(c.tail))
	}
	*c = capCut{}
}

// trim removes the last n kept bytes.
func (st *capped) trim(n int) {
	for n > 0 && len(st.blocks) > 0 {
		i := len(st.blocks) - 1
		k := min(n, len(st.blocks[i]))
		st.blocks[i] = st.blocks[i][:len(st.blocks[i])-k]
		n -= k
		if len(st.blocks[i]) == 0 {
			st.blocks = st.blocks[:i]
		}
	}
}
