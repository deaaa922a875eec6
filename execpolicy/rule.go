package execpolicy

import (
	"fmt"
	"strings"
	"unicode"
)

// Token is one element of a prefix pattern after its program: one literal,
// or several alternatives any of which matches. The zero value matches
// nothing.
type Token struct {
	Alts []string // one element for a literal
}

func (t Token) matches(s string, canonical bool) bool {
	for _, a := range t.Alts {
		if a == s || canonical && foldCase(a) == foldCase(s) {
			return true
		}
	}
	return false
}

// PrefixRule says Decision about every command whose first token is
// Program and whose next tokens match Rest, one by one. Extra trailing
// tokens are allowed. Values are immutable once in a Policy.
type PrefixRule struct {
	Program       string
	Rest          []Token
	Decision      Decision
	Justification string // "" when the rule has none
	// Canonical compares tokens after Unicode case folding
	// (canonical_matching=True); the zero value compares bytes.
	Canonical bool
}

// Match is one rule that matched a command.
type Match struct {
	// MatchedPrefix is the part of the command the rule's pattern covered
	// (with the program as written in the command, or the rule's program
	// for a host-executable match).
	MatchedPrefix []string
	Decision      Decision
	// ResolvedProgram is the absolute program path of a host-executable
	// match; "" otherwise.
	ResolvedProgram string
	Justification   string
	// Heuristic marks the fallback entry of Evaluate, not a rule.
	Heuristic bool
}

// match reports the tokens of cmd that r covers, or nil.
func (r *PrefixRule) match(cmd []string) []string {
	n := len(r.Rest) + 1
	if len(cmd) < n || !(Token{Alts: []string{r.Program}}).matches(cmd[0], r.Canonical) {
		return nil
	}
	for i, t := range r.Rest {
		if !t.matches(cmd[i+1], r.Canonical) {
			return nil
		}
	}
	return append([]string(nil), cmd[:n]...)
}

// NetworkRule is a parsed network_rule(): kept, not acted on.
type NetworkRule struct {
	Host          string // lower-cased, without port or trailing dot
	Protocol      string // http, https, socks5_tcp or socks5_udp
	Decision      Decision
	Justification string
}

// debugString renders r the way the reference's load errors print a rule
// (Rust debug syntax), so that error texts compare equal.
func (r *PrefixRule) debugString() string {
	rest := make([]string, len(r.Rest))
	for i, t := range r.Rest {
		if len(t.Alts) == 1 {
			rest[i] = "Single(" + rustQuote(t.Alts[0]) + ")"
		} else {
			rest[i] = "Alts(" + rustList(t.Alts) + ")"
		}
	}
	return fmt.Sprintf("PrefixRule { pattern: PrefixPattern { canonical_matching: %t, first: %s, rest: [%s] }, decision: %s, justification: %s }",
		r.Canonical, rustQuote(r.Program), strings.Join(rest, ", "), rustDecision(r.Decision), rustOption(r.Justification))
}

// debugString renders m as the reference's load errors print a match.
func (m Match) debugString() string {
	resolved := "None"
	if m.ResolvedProgram != "" {
		resolved = "Some(AbsolutePathBuf(" + rustQuote(m.ResolvedProgram) + "))"
	}
	return fmt.Sprintf("PrefixRuleMatch { matched_prefix: %s, decision: %s, resolved_program: %s, justification: %s }",
		rustList(m.MatchedPrefix), rustDecision(m.Decision), resolved, rustOption(m.Justification))
}

func rustDecision(d Decision) string {
	s := d.String()
	return strings.ToUpper(s[:1]) + s[1:]
}

func rustOption(s string) string {
	if s == "" {
		return "None"
	}
	return "Some(" + rustQuote(s) + ")"
}

func rustList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = rustQuote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// rustQuote quotes s as Rust's Debug does for a string.
func rustQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case 0:
			b.WriteString(`\0`)
		default:
			if unicode.IsPrint(r) || r == ' ' {
				b.WriteRune(r)
			} else {
				fmt.Fprintf(&b, `\u{%x}`, r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// Decision is what a rule says about a command. The zero value is Allow.
// Decisions are ordered by strictness: Forbidden > Prompt > Allow, and
// the strictest matching rule decides.
type Decision int

const (
	Allow Decision = iota
	Prompt
	Forbidden
)

// String returns the decision as the rules files spell it.
func (d Decision) String() string {
	switch d {
	case Allow:
		return "allow"
	case Prompt:
		return "prompt"
	case Forbidden:
		return "forbidden"
	}
	return "invalid"
}

// Stricter returns the stricter of d and o.
func (d Decision) Stricter(o Decision) Decision { return max(d, o) }

// fullFolds are the full case foldings that map one rune to several; the
// rest fold rune by rune.
var fullFolds = map[rune]string{
	'ß': "ss", 'ẞ': "ss", 'ŉ': "ʼn", 'ǰ': "ǰ", 'ΐ': "ΐ", 'ΰ': "ΰ", 'և': "եւ",
	'ﬀ': "ff", 'ﬁ': "fi", 'ﬂ': "fl", 'ﬃ': "ffi", 'ﬄ': "ffl", 'ﬅ': "st", 'ﬆ': "st",
	'İ': "i̇",
}

// foldCase returns s with Unicode full case folding applied, so that
// "STRASSE" and "Straße" fold equal. Canonical-matching rules compare
// folded tokens.
func foldCase(s string) string {
	var b strings.Builder
	for _, r := range s {
		if f, ok := fullFolds[r]; ok {
			b.WriteString(f)
			continue
		}
		b.WriteRune(unicode.ToLower(unicode.ToUpper(r)))
	}
	return b.String()
}
