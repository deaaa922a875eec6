package shelltool

import "strings"

// quoting strategies of a chunk of a word, as bits of a set.
const (
	quoteNone   = 1 << iota // the chunk is safe as is
	quoteSingle             // '…'
	quoteDouble             // "…" with \ before $ ` " \
)

// shellJoin joins words into one shell-quoted string the way the Rust shlex
// crate's join does, so that elicitation messages read like the
// reference's: a word of only safe characters stays as is, the empty word
// is a pair of single quotes, and other words are quoted chunk by chunk, single quotes
// preferred, double quotes when the chunk holds ' or \, and a ^ inside a
// word starting a single-quoted chunk of its own (a^b → a'^b').
func shellJoin(words []string) string {
	var b strings.Builder
	for i, w := range words {
		if i > 0 {
			b.WriteByte(' ')
		}
		shellQuote(&b, w)
	}
	return b.String()
}

// shellQuote appends one quoted word to b.
func shellQuote(b *strings.Builder, w string) {
	if w == "" {
		b.WriteString("''")
		return
	}
	for i := 0; i < len(w); {
		j, ok := quoteChunk(w, i)
		chunk := w[i:j]
		switch {
		case ok&quoteNone != 0:
			b.WriteString(chunk)
		case ok&quoteSingle != 0:
			b.WriteString("'" + chunk + "'")
		default:
			b.WriteByte('"')
			for k := 0; k < len(chunk); k++ {
				if strings.IndexByte("$`\"\\", chunk[k]) >= 0 {
					b.WriteByte('\\')
				}
				b.WriteByte(chunk[k])
			}
			b.WriteByte('"')
		}
		i = j
	}
}

// quoteChunk returns the end of the chunk of w starting at i and the
// strategies that can quote it: the chunk grows while some strategy still
// works, and a ^ after the chunk's start ends it.
func quoteChunk(w string, i int) (end, ok int) {
	ok = quoteNone | quoteSingle | quoteDouble
	j := i
	if w[i] == '^' {
		ok, j = quoteSingle, i+1
	}
	for ; j < len(w); j++ {
		c := w[j]
		if c == '^' {
			break
		}
		cur := ok
		if !safeUnquoted(c) {
			cur &^= quoteNone
		}
		if c == '\'' || c == '\\' {
			cur &^= quoteSingle
		}
		if cur == 0 {
			break
		}
		ok = cur
	}
	return j, ok
}

// safeUnquoted reports whether c needs no quoting.
func safeUnquoted(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte(",._+:@%/-", c) >= 0
}
