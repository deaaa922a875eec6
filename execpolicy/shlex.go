package execpolicy

import (
	"errors"
	"strings"
)

// ErrShellSyntax is returned by SplitShell for an unterminated quote or a
// trailing backslash.
var ErrShellSyntax = errors.New("invalid shell syntax")

// SplitShell splits s into words the way a POSIX shell splits a simple
// command line, without expansions: blanks (space, tab, newline) separate
// words; '...' keeps everything literally; "..." keeps everything but a
// backslash before $ ` " \ or newline; an unquoted backslash quotes the next
// byte (backslash-newline vanishes); '#' at the start of a word starts a
// comment that runs to the end of the line. Operators (;, |, &, <, >) are
// ordinary bytes. It returns ErrShellSyntax for an unterminated quote or a
// trailing backslash, and an empty slice for a blank string.
func SplitShell(s string) ([]string, error) {
	var words []string
	i := 0
	for {
		// Skip blanks and comments between words.
		for i < len(s) {
			c := s[i]
			if isShellBlank(c) {
				i++
				continue
			}
			if c == '#' {
				for i < len(s) && s[i] != '\n' {
					i++
				}
				continue
			}
			break
		}
		if i >= len(s) {
			return words, nil
		}
		w, next, err := shellWord(s, i)
		if err != nil {
			return nil, err
		}
		words = append(words, w)
		i = next
	}
}

func isShellBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\n' }

// shellWord reads one word starting at s[i] (not a blank) and returns it
// with the index just past it.
func shellWord(s string, i int) (string, int, error) {
	var b strings.Builder
	for i < len(s) {
		c := s[i]
		switch {
		case isShellBlank(c):
			return b.String(), i, nil
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return "", 0, ErrShellSyntax
			}
			b.WriteString(s[i+1 : i+1+end])
			i += end + 2
		case c == '"':
			next, err := shellDouble(s, i+1, &b)
			if err != nil {
				return "", 0, err
			}
			i = next
		case c == '\\':
			if i+1 >= len(s) {
				return "", 0, ErrShellSyntax
			}
			if s[i+1] != '\n' {
				b.WriteByte(s[i+1])
			}
			i += 2
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String(), i, nil
}

// shellDouble reads the inside of a double-quoted string starting after the
// opening quote and returns the index past the closing one.
func shellDouble(s string, i int, b *strings.Builder) (int, error) {
	for i < len(s) {
		c := s[i]
		switch c {
		case '"':
			return i + 1, nil
		case '\\':
			if i+1 >= len(s) {
				return 0, ErrShellSyntax
			}
			switch n := s[i+1]; n {
			case '$', '`', '"', '\\':
				b.WriteByte(n)
			case '\n':
			default:
				b.WriteByte('\\')
				b.WriteByte(n)
			}
			i += 2
		default:
			b.WriteByte(c)
			i++
		}
	}
	return 0, ErrShellSyntax
}

// JoinShell quotes each word so that SplitShell gives it back and joins
// them with spaces. A word that needs no quoting is kept as is; otherwise
// the shortest run of bytes that one quoting style can hold is put in
// single quotes (preferred) or double quotes, so "it's" becomes "it's" in
// double quotes and a^b becomes a'^b'. The empty word is ”. It reports
// false if a word contains a NUL byte, which no shell word can hold.
func JoinShell(words []string) (string, bool) {
	parts := make([]string, len(words))
	for i, w := range words {
		q, ok := quoteShell(w)
		if !ok {
			return "", false
		}
		parts[i] = q
	}
	return strings.Join(parts, " "), true
}

const (
	okBare   = 1
	okSingle = 2
	okDouble = 4
)

func quoteShell(w string) (string, bool) {
	if w == "" {
		return "''", true
	}
	if strings.IndexByte(w, 0) >= 0 {
		return "", false
	}
	var b strings.Builder
	for rest := w; rest != ""; {
		n, style := quoteChunk(rest)
		if n == len(w) && style == okBare {
			return w, true
		}
		chunk := rest[:n]
		rest = rest[n:]
		switch style {
		case okBare:
			b.WriteString(chunk)
		case okSingle:
			b.WriteString("'" + chunk + "'")
		default:
			b.WriteByte('"')
			for i := 0; i < len(chunk); i++ {
				if c := chunk[i]; c == '$' || c == '`' || c == '"' || c == '\\' {
					b.WriteByte('\\')
				}
				b.WriteByte(chunk[i])
			}
			b.WriteByte('"')
		}
	}
	return b.String(), true
}

// quoteChunk returns the length of the longest prefix of s that one style
// can hold, and the best such style (bare, then single, then double). A
// leading '^' can only be single-quoted, and only right after the quote.
func quoteChunk(s string) (int, int) {
	ok := okBare | okSingle | okDouble
	i := 0
	if s[0] == '^' {
		ok, i = okSingle, 1
	}
	for ; i < len(s); i++ {
		cur := ok & bytesStyles(s[i])
		if cur == 0 {
			break
		}
		ok = cur
	}
	switch {
	case ok&okBare != 0:
		return i, okBare
	case ok&okSingle != 0:
		return i, okSingle
	}
	return i, okDouble
}

// bytesStyles tells which quoting styles can hold c.
func bytesStyles(c byte) int {
	s := okBare | okSingle | okDouble
	bare := c == '+' || c == '-' || c == '.' || c == '/' || c == ':' || c == '@' ||
		c == ']' || c == '_' || ('0' <= c && c <= '9') || ('A' <= c && c <= 'Z') ||
		('a' <= c && c <= 'z')
	if !bare {
		s &^= okBare
	}
	if c == '\'' || c == '^' || c == '\\' {
		s &^= okSingle
	}
	if c == '`' || c == '$' || c == '!' || c == '^' {
		s &^= okDouble
	}
	return s
}
