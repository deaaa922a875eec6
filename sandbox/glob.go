package sandbox

import (
	"fmt"
	"strings"
)

// globMatcher matches slash-separated relative paths against a git-style
// glob (docs/sandbox.md §3.5): `*` and `?` never cross `/`, a `**` component
// matches any number of components (at least one when it ends the
// pattern), `[...]` is a class (`!` or `^` negates) and an unclosed `[` is
// a literal, a backslash escapes, and `{a,b}` alternates.
type globMatcher struct {
	alts [][]globSegment
}

// globSegment is one component of a pattern: a `**` or a token list.
type globSegment struct {
	globstar bool
	tokens   []globToken
}

// globToken is a literal rune, `?`, `*` or a character class.
type globToken struct {
	kind   byte // 'l' literal, '?' any, '*' star, '[' class
	r      rune
	negate bool
	ranges [][2]rune
}

// compileGlob compiles a relative glob. A malformed pattern is an error,
// which callers treat as fail closed.
func compileGlob(pattern string) (*globMatcher, error) {
	alts, err := expandBraces(pattern)
	if err != nil {
		return nil, err
	}
	m := &globMatcher{}
	for _, alt := range alts {
		var segs []globSegment
		for _, comp := range strings.Split(alt, "/") {
			if comp == "" {
				continue
			}
			if comp == "**" {
				segs = append(segs, globSegment{globstar: true})
				continue
			}
			toks, err := compileComponent(comp)
			if err != nil {
				return nil, fmt.Errorf("invalid glob pattern %q: %w", pattern, err)
			}
			segs = append(segs, globSegment{tokens: toks})
		}
		m.alts = append(m.alts, segs)
	}
	return m, nil
}

// match reports whether the relative path matches.
func (m *globMatcher) match(rel string) bool {
	parts := strings.Split(strings.Trim(rel, "/"), "/")
	for _, segs := range m.alts {
		if matchSegments(segs, parts) {
			return true
		}
	}
	return false
}

// matchSegments matches components against segments, expanding `**`.
func matchSegments(segs []globSegment, parts []string) bool {
	if len(segs) == 0 {
		return len(parts) == 0
	}
	if segs[0].globstar {
		least := 0
		if len(segs) == 1 {
			least = 1
		}
		for i := least; i <= len(parts); i++ {
			if matchSegments(segs[1:], parts[i:]) {
				return true
			}
		}
		return false
	}
	return len(parts) > 0 && matchTokens(segs[0].tokens, []rune(parts[0])) && matchSegments(segs[1:], parts[1:])
}

// matchTokens matches one component, backtracking over stars.
func matchTokens(toks []globToken, s []rune) bool {
	for len(toks) > 0 {
		t := toks[0]
		switch t.kind {
		case '*':
			for i := 0; i <= len(s); i++ {
				if matchTokens(toks[1:], s[i:]) {
					return true
				}
			}
			return false
		case '?':
			if len(s) == 0 {
				return false
			}
		case '[':
			if len(s) == 0 || t.inClass(s[0]) == t.negate {
				return false
			}
		default:
			if len(s) == 0 || s[0] != t.r {
				return false
			}
		}
		toks, s = toks[1:], s[1:]
	}
	return len(s) == 0
}

// inClass reports whether r falls in one of the class's ranges.
func (t globToken) inClass(r rune) bool {
	for _, rg := range t.ranges {
		if rg[0] <= r && r <= rg[1] {
			return true
		}
	}
	return false
}

// compileComponent tokenises one path component.
func compileComponent(comp string) ([]globToken, error) {
	rs := []rune(comp)
	var toks []globToken
	for i := 0; i < len(rs); i++ {
		switch rs[i] {
		case '\\':
			if i+1 < len(rs) {
				i++
			}
			toks = append(toks, globToken{kind: 'l', r: rs[i]})
		case '?':
			toks = append(toks, globToken{kind: '?'})
		case '*':
			if i+1 < len(rs) && rs[i+1] == '*' {
				return nil, fmt.Errorf("invalid use of **; must be one path component")
			}
			toks = append(toks, globToken{kind: '*'})
		case '[':
			tok, next, ok, err := compileClass(rs, i)
			if err != nil {
				return nil, err
			}
			if !ok { // unclosed: a literal '['
				toks = append(toks, globToken{kind: 'l', r: '['})
				continue
			}
			toks = append(toks, tok)
			i = next
		default:
			toks = append(toks, globToken{kind: 'l', r: rs[i]})
		}
	}
	return toks, nil
}

// compileClass parses a class starting at rs[start] == '['. It returns the
// index of the closing ']', or ok=false when the class is unclosed.
func compileClass(rs []rune, start int) (tok globToken, end int, ok bool, err error) {
	tok.kind = '['
	i := start + 1
	if i < len(rs) && (rs[i] == '!' || rs[i] == '^') {
		tok.negate = true
		i++
	}
	first := true
	for ; i < len(rs); i++ {
		c := rs[i]
		if c == ']' && !first {
			return tok, i, true, nil
		}
		first = false
		if c == '\\' && i+1 < len(rs) {
			i++
			c = rs[i]
		}
		if i+2 < len(rs) && rs[i+1] == '-' && rs[i+2] != ']' {
			hi := rs[i+2]
			if hi < c {
				return tok, 0, false, fmt.Errorf("invalid character range %c-%c", c, hi)
			}
			tok.ranges = append(tok.ranges, [2]rune{c, hi})
			i += 2
			continue
		}
		tok.ranges = append(tok.ranges, [2]rune{c, c})
	}
	return tok, 0, false, nil
}

// expandBraces expands `{a,b}` alternations (not nested) into plain
// patterns. Escaped braces and braces inside classes are literal.
func expandBraces(pattern string) ([]string, error) {
	open, inClass := -1, false
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; {
		case c == '\\':
			i++
		case inClass:
			if c == ']' {
				inClass = false
			}
		case c == '[':
			inClass = strings.IndexByte(pattern[i+1:], ']') >= 0
		case c == '{':
			if open >= 0 {
				return nil, fmt.Errorf("invalid glob pattern %q: nested alternate groups are not allowed", pattern)
			}
			open = i
		case c == '}' && open >= 0:
			var out []string
			for _, alt := range splitAlternatives(pattern[open+1 : i]) {
				rest, err := expandBraces(pattern[i+1:])
				if err != nil {
					return nil, err
				}
				for _, r := range rest {
					out = append(out, pattern[:open]+alt+r)
				}
			}
			return out, nil
		}
	}
	if open >= 0 {
		return nil, fmt.Errorf("invalid glob pattern %q: unclosed alternate group", pattern)
	}
	return []string{pattern}, nil
}

// splitAlternatives splits a brace body at unescaped commas.
func splitAlternatives(body string) []string {
	var out []string
	start := 0
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '\\':
			i++
		case ',':
			out = append(out, body[start:i])
			start = i + 1
		}
	}
	return append(out, body[start:])
}

// firstMeta returns the index of the first unescaped `*?[]` in pattern, or
// -1 when the pattern is a literal path.
func firstMeta(pattern string) int {
	for i := 0; i < len(pattern); i++ {
		switch pattern[i] {
		case '\\':
			i++
		case '*', '?', '[', ']':
			return i
		}
	}
	return -1
}

// unescape removes glob backslash escapes from a literal part.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
