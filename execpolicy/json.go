package execpolicy

import (
	"fmt"
	"strings"
)

// checkJSON renders the matches as `execpolicy check` prints them, keys in
// the reference's order; pretty indents by two spaces.
func checkJSON(ms []Match, pretty bool) string {
	w := &jsonWriter{pretty: pretty}
	w.open('{')
	w.key("matchedRules")
	w.open('[')
	for _, m := range ms {
		w.elem()
		w.open('{')
		if m.Heuristic {
			w.key("heuristicsRuleMatch")
			w.open('{')
			w.key("command")
			w.strings(m.MatchedPrefix)
			w.key("decision")
			w.str(m.Decision.String())
		} else {
			w.key("prefixRuleMatch")
			w.open('{')
			w.key("matchedPrefix")
			w.strings(m.MatchedPrefix)
			w.key("decision")
			w.str(m.Decision.String())
			if m.ResolvedProgram != "" {
				w.key("resolvedProgram")
				w.str(m.ResolvedProgram)
			}
			if m.Justification != "" {
				w.key("justification")
				w.str(m.Justification)
			}
		}
		w.close('}')
		w.close('}')
	}
	w.close(']')
	if len(ms) > 0 {
		d := Allow
		for _, m := range ms {
			d = d.Stricter(m.Decision)
		}
		w.key("decision")
		w.str(d.String())
	}
	w.close('}')
	return w.b.String()
}

// jsonWriter writes JSON like serde_json: compact, or pretty with
// two-space indents and "key": value; empty containers stay "[]"/"{}".
type jsonWriter struct {
	b      strings.Builder
	pretty bool
	depth  int
	// first is true right after an opening bracket.
	first bool
}

func (w *jsonWriter) open(c byte) {
	w.b.WriteByte(c)
	w.depth++
	w.first = true
}

func (w *jsonWriter) close(c byte) {
	w.depth--
	if !w.first && w.pretty {
		w.newline()
	}
	w.b.WriteByte(c)
	w.first = false
}

func (w *jsonWriter) newline() {
	w.b.WriteByte('\n')
	w.b.WriteString(strings.Repeat("  ", w.depth))
}

// elem starts an element of an array or object.
func (w *jsonWriter) elem() {
	if !w.first {
		w.b.WriteByte(',')
	}
	if w.pretty {
		w.newline()
	}
	w.first = false
}

func (w *jsonWriter) key(k string) {
	w.elem()
	w.b.WriteString(jsonString(k))
	w.b.WriteByte(':')
	if w.pretty {
		w.b.WriteByte(' ')
	}
}

func (w *jsonWriter) str(s string) { w.b.WriteString(jsonString(s)) }

func (w *jsonWriter) strings(ss []string) {
	w.open('[')
	for _, s := range ss {
		w.elem()
		w.str(s)
	}
	w.close(']')
}

// jsonString quotes s as serde_json does: only ", \ and control bytes are
// escaped.
func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r < 0x20 {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
