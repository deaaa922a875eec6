package execpolicy

import (
	"bytes"
	"strings"

	"go.starlark.net/syntax"
)

// Codex's Starlark dialect has f-strings (f"…{expr}…", with {{ and }} for
// braces, expressions that may hold quotes of their own and a !r or !s
// conversion, no format spec); go.starlark.net has none. rewriteFStrings
// turns each f-string into an equivalent expression of plain Starlark,
// ("lit" + _fstring_str(expr) + "lit"), keeping every newline where it was so that
// line numbers stay right. Columns after an f-string on its line shift.

// The rewrite calls str and repr under names of their own, predeclared by
// the loader, so that a file rebinding str does not change its f-strings.
const (
	fstrName  = "_fstring_str"
	freprName = "_fstring_repr"
)

// fscan is the state of one rewrite.
type fscan struct {
	src  []byte
	i    int
	out  bytes.Buffer
	file string
}

func rewriteFStrings(file string, src []byte) ([]byte, error) {
	if !bytes.Contains(src, []byte(`f"`)) && !bytes.Contains(src, []byte(`f'`)) {
		return src, nil
	}
	s := &fscan{src: src, file: file}
	for s.i < len(src) {
		c := src[s.i]
		switch {
		case c == '#':
			end := bytes.IndexByte(src[s.i:], '\n')
			if end < 0 {
				end = len(src) - s.i
			}
			s.out.Write(src[s.i : s.i+end])
			s.i += end
		case c == 'f' && s.i+1 < len(src) && isQuote(src[s.i+1]) && !identByteBefore(src, s.i):
			if err := s.fstring(); err != nil {
				return nil, err
			}
		case isQuote(c):
			end, err := s.skipString(s.i)
			if err != nil {
				return nil, err
			}
			s.out.Write(src[s.i:end])
			s.i = end
		default:
			s.out.WriteByte(c)
			s.i++
		}
	}
	return s.out.Bytes(), nil
}

func isQuote(c byte) bool { return c == '"' || c == '\'' }

func isIdentByte(c byte) bool {
	return c == '_' || c >= 0x80 || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

func identByteBefore(src []byte, i int) bool { return i > 0 && isIdentByte(src[i-1]) }

// pos returns the source position of byte offset i.
func (s *fscan) pos(i int) syntax.Position {
	line := int32(1 + bytes.Count(s.src[:i], []byte("\n")))
	col := int32(i - bytes.LastIndexByte(s.src[:i], '\n'))
	return syntax.MakePosition(&s.file, line, col)
}

func (s *fscan) fail(i int, msg string) error {
	return syntax.Error{Pos: s.pos(i), Msg: msg}
}

// quoteAt returns the quote string (one or three quote bytes) at i.
func quoteAt(src []byte, i int) string {
	q := src[i : i+1]
	if bytes.HasPrefix(src[i:], bytes.Repeat(q, 3)) {
		return string(bytes.Repeat(q, 3))
	}
	return string(q)
}

// skipString returns the offset just past the string literal starting at
// the quote at i (backslash escapes honoured).
func (s *fscan) skipString(i int) (int, error) {
	q := quoteAt(s.src, i)
	for j := i + len(q); j < len(s.src); j++ {
		switch {
		case s.src[j] == '\\':
			j++
		case len(q) == 1 && s.src[j] == '\n':
			return 0, s.fail(i, "unfinished string literal")
		case strings.HasPrefix(string(s.src[j:min(j+len(q), len(s.src))]), q):
			return j + len(q), nil
		}
	}
	return 0, s.fail(i, "unfinished string literal")
}

// fstring rewrites the f-string whose 'f' is at s.i.
func (s *fscan) fstring() error {
	start := s.i
	q := quoteAt(s.src, s.i+1)
	j := s.i + 1 + len(q)
	var lit []byte
	s.out.WriteString("(" + q)
	for {
		if j >= len(s.src) || len(q) == 1 && s.src[j] == '\n' {
			return s.fail(start, "unfinished string literal")
		}
		c := s.src[j]
		switch {
		case strings.HasPrefix(string(s.src[j:min(j+len(q), len(s.src))]), q):
			s.out.Write(lit)
			s.out.WriteString(q + ")")
			s.i = j + len(q)
			return nil
		case c == '\\' && j+1 < len(s.src):
			lit = append(lit, c, s.src[j+1])
			j += 2
		case (c == '{' || c == '}') && j+1 < len(s.src) && s.src[j+1] == c:
			lit = append(lit, c)
			j += 2
		case c == '}':
			return s.fail(j, "single '}' is not allowed in an f-string")
		case c == '{':
			expr, conv, next, err := s.fexpr(j + 1)
			if err != nil {
				return err
			}
			s.out.Write(lit)
			lit = lit[:0]
			s.out.WriteString(q + " + " + conv + "(" + expr + ") + " + q)
			j = next
		default:
			lit = append(lit, c)
			j++
		}
	}
}

// fexpr reads an f-string expression starting at i (after '{') and
// returns it, the conversion function (str or repr) and the offset past
// the closing '}'.
func (s *fscan) fexpr(i int) (string, string, int, error) {
	depth := 0
	for j := i; j < len(s.src); j++ {
		c := s.src[j]
		switch {
		case isQuote(c):
			end, err := s.skipString(j)
			if err != nil {
				return "", "", 0, err
			}
			j = end - 1
		case c == '(' || c == '[' || c == '{':
			depth++
		case (c == ')' || c == ']') && depth > 0:
			depth--
		case c == '}' && depth > 0:
			depth--
		case depth == 0 && (c == '}' || c == '!'):
			expr := string(s.src[i:j])
			if strings.TrimSpace(expr) == "" {
				return "", "", 0, s.fail(j, "f-string: expression expected")
			}
			conv := fstrName
			if c == '!' {
				if j+2 >= len(s.src) || s.src[j+2] != '}' || (s.src[j+1] != 'r' && s.src[j+1] != 's') {
					return "", "", 0, s.fail(j, "f-string: expected !r or !s before '}'")
				}
				if s.src[j+1] == 'r' {
					conv = freprName
				}
				j += 2
			}
			return expr, conv, j + 1, nil
		case depth == 0 && c == ':':
			return "", "", 0, s.fail(j, "f-string: format specs are not supported")
		}
	}
	return "", "", 0, s.fail(i-1, "f-string: '{' was never closed")
}
