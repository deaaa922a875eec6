package agenttool

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// BytesPerToken is the fixed bytes-to-tokens ratio of the approximation (docs/client.md §2).
const BytesPerToken = 4

// TruncationPolicy is a budget for model-visible text: either a number of
// bytes or a number of tokens (4 bytes each). The zero value is BytesPolicy(0).
type TruncationPolicy struct {
	n      int
	tokens bool
}

// BytesPolicy returns a byte-budget policy; the marker counts dropped characters.
func BytesPolicy(n int) TruncationPolicy { return TruncationPolicy{n: max(n, 0)} }

// TokensPolicy returns a token-budget policy (n × 4 bytes); the marker counts
// dropped tokens.
func TokensPolicy(n int) TruncationPolicy { return TruncationPolicy{n: max(n, 0), tokens: true} }

// ByteBudget returns the budget in bytes.
func (p TruncationPolicy) ByteBudget() int {
	if !p.tokens {
		return p.n
	}
	const maxInt = int(^uint(0) >> 1)
	if p.n > maxInt/BytesPerToken {
		return maxInt
	}
	return p.n * BytesPerToken
}

// ApproxTokensFromBytes returns ceil(n / 4), and 0 for n <= 0.
func ApproxTokensFromBytes(n int) int {
	if n <= 0 {
		return 0
	}
	return (n + BytesPerToken - 1) / BytesPerToken
}

// ApproxTokenCount returns the approximate token count of s.
func ApproxTokenCount(s string) int { return ApproxTokensFromBytes(len(s)) }

// FormattedTruncate returns text unchanged when it fits the policy's byte
// budget, and otherwise "Total output lines: L\n\n" followed by
// Truncate(text, policy) (docs/client.md §7.1).
func FormattedTruncate(text string, p TruncationPolicy) string {
	if len(text) <= p.ByteBudget() {
		return text
	}
	return "Total output lines: " + strconv.Itoa(countLines(text)) + "\n\n" + Truncate(text, p)
}

// countLines counts lines as Rust's str::lines does: split on "\n", not
// counting a trailing empty line.
func countLines(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// Truncate keeps budget/2 bytes from the start and the rest from the end,
// both cut on UTF-8 boundaries, and puts a marker between them: "…N tokens
// truncated…" (N = ceil((len − budget) / 4)) or "…N chars truncated…" (N =
// characters dropped). A zero budget yields the marker alone.
func Truncate(text string, p TruncationPolicy) string {
	if text == "" {
		return ""
	}
	budget := p.ByteBudget()
	if budget == 0 {
		return truncationMarker(p, len(text), utf8.RuneCountInString(text))
	}
	if len(text) <= budget {
		return text
	}
	left := budget / 2
	right := budget - left
	tailTarget := len(text) - right
	prefixEnd, suffixStart, removed, started := 0, len(text), 0, false
	for i := 0; i < len(text); {
		_, w := utf8.DecodeRuneInString(text[i:])
		end := i + w
		switch {
		case end <= left:
			prefixEnd = end
		case i >= tailTarget:
			if !started {
				suffixStart, started = i, true
			}
		default:
			removed++
		}
		i = end
	}
	suffixStart = max(suffixStart, prefixEnd)
	return text[:prefixEnd] + truncationMarker(p, len(text)-budget, removed) + text[suffixStart:]
}

func truncationMarker(p TruncationPolicy, removedBytes, removedChars int) string {
	if p.tokens {
		return "…" + strconv.Itoa(ApproxTokensFromBytes(removedBytes)) + " tokens truncated…"
	}
	return "…" + strconv.Itoa(removedChars) + " chars truncated…"
}

// LossyUTF8 converts b to a string, replacing each maximal invalid subpart
// with U+FFFD, like Rust's String::from_utf8_lossy.
func LossyUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + 8)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r != utf8.RuneError || n > 1 {
			sb.Write(b[:n])
			b = b[n:]
			continue
		}
		sb.WriteRune(utf8.RuneError)
		b = b[maximalSubpart(b):]
	}
	return sb.String()
}

// maximalSubpart returns the length of the invalid sequence at the start of
// b (at least 1): the lead byte plus the continuation bytes that could still
// have formed a valid character (Unicode §3.9, "maximal subpart").
func maximalSubpart(b []byte) int {
	lo, hi, need := byte(0x80), byte(0xBF), 0
	switch c := b[0]; {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		lo, need = 0xA0, 2
	case c == 0xED:
		hi, need = 0x9F, 2
	case c >= 0xE1 && c <= 0xEF:
		need = 2
	case c == 0xF0:
		lo, need = 0x90, 3
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	case c == 0xF4:
		hi, need = 0x8F, 3
	default:
		return 1
	}
	n := 1
	for ; n <= need && n < len(b); n++ {
		if b[n] < lo || b[n] > hi {
			break
		}
		lo, hi = 0x80, 0xBF
	}
	return n
}
