package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// This file keeps a TOML document in file order, cuts it to key paths and
// writes it back out the way the Codex CLI's TOML writer does, so that
// environmentConfig/read returns the reference's text byte for byte
// (docs/protocol.md §6.14): values before sub-tables, `[a.b]` headers only
// for tables that hold values (or nothing at all), `[[a.b]]` for arrays of
// tables (inline ones too), a blank line before every header but the first
// line, numbers and dates normalised, strings quoted by the writer's own
// preference order.

// table is a TOML table with its keys in file order.
type table struct {
	keys []string
	vals map[string]any // scalars, []any, *table, []*table (an array of tables)
}

func (t *table) set(k string, v any) {
	if _, ok := t.vals[k]; !ok {
		t.keys = append(t.keys, k)
	}
	t.vals[k] = v
}

func newTable() *table { return &table{vals: map[string]any{}} }

// decodeOrdered decodes text into a table that keeps file order.
func decodeOrdered(text string) (*table, error) {
	var raw map[string]any
	md, err := toml.Decode(text, &raw)
	if err != nil {
		return nil, err
	}
	// A key's place is that of the first key (in file order) under it.
	order := map[string]int{}
	for i, k := range md.Keys() {
		for n := 1; n <= len(k); n++ {
			p := strings.Join(k[:n], "\x00")
			if _, ok := order[p]; !ok {
				order[p] = i
			}
		}
	}
	return orderTable(raw, "", order), nil
}

func orderTable(m map[string]any, prefix string, order map[string]int) *table {
	t := newTable()
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	pos := func(k string) int {
		if i, ok := order[prefix+k]; ok {
			return i
		}
		return math.MaxInt
	}
	// Insertion sort by position, then by name: the maps are small.
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0; j-- {
			a, b := keys[j-1], keys[j]
			if pa, pb := pos(a), pos(b); pa < pb || (pa == pb && a <= b) {
				break
			}
			keys[j-1], keys[j] = keys[j], keys[j-1]
		}
	}
	for _, k := range keys {
		t.set(k, orderValue(m[k], prefix+k+"\x00", order))
	}
	return t
}

func orderValue(v any, prefix string, order map[string]int) any {
	switch v := v.(type) {
	case map[string]any:
		return orderTable(v, prefix, order)
	case []map[string]any:
		out := make([]*table, len(v))
		for i, e := range v {
			out[i] = orderTable(e, prefix, order)
		}
		return out
	case []any:
		out := make([]any, len(v))
		allTables := len(v) > 0
		for i, e := range v {
			out[i] = orderValue(e, prefix, order)
			if _, ok := out[i].(*table); !ok {
				allTables = false
			}
		}
		if allTables { // an inline array of tables is written as [[…]]
			ts := make([]*table, len(out))
			for i, e := range out {
				ts[i] = e.(*table)
			}
			return ts
		}
		return out
	}
	return v
}

// selection is a set of key paths as a tree; whole marks a path's end.
type selection struct {
	whole bool
	sub   map[string]*selection
}

func newSelection(paths [][]string) *selection {
	root := &selection{sub: map[string]*selection{}}
	for _, p := range paths {
		s := root
		for _, k := range p {
			if s.whole {
				break
			}
			next := s.sub[k]
			if next == nil {
				next = &selection{sub: map[string]*selection{}}
				s.sub[k] = next
			}
			s = next
		}
		s.whole = true
	}
	return root
}

// cut keeps what sel names, in t's order. A path through a value that is not
// a table keeps that value; a path to a missing key of an existing table
// keeps the table, empty.
func cut(t *table, sel *selection) *table {
	out := newTable()
	for _, k := range t.keys {
		s := sel.sub[k]
		if s == nil {
			continue
		}
		v := t.vals[k]
		if sub, ok := v.(*table); ok && !s.whole {
			out.set(k, cut(sub, s))
			continue
		}
		out.set(k, v)
	}
	return out
}

// writeDocument writes t as a TOML document.
func writeDocument(t *table) string {
	var b strings.Builder
	writeTable(&b, nil, t, false)
	return b.String()
}

func isTableLike(v any) bool {
	switch v.(type) {
	case *table, []*table:
		return true
	}
	return false
}

func writeTable(b *strings.Builder, path []string, t *table, arrayElem bool) {
	var values, tables []string
	for _, k := range t.keys {
		if isTableLike(t.vals[k]) {
			tables = append(tables, k)
		} else {
			values = append(values, k)
		}
	}
	header := arrayElem || (len(path) > 0 && (len(values) > 0 || len(tables) == 0))
	if header {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		open, shut := "[", "]"
		if arrayElem {
			open, shut = "[[", "]]"
		}
		b.WriteString(open)
		for i, k := range path {
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(tomlKey(k))
		}
		b.WriteString(shut + "\n")
	}
	for _, k := range values {
		b.WriteString(tomlKey(k) + " = " + inlineValue(t.vals[k]) + "\n")
	}
	for _, k := range tables {
		sub := append(path[:len(path):len(path)], k)
		switch v := t.vals[k].(type) {
		case *table:
			writeTable(b, sub, v, false)
		case []*table:
			for _, e := range v {
				writeTable(b, sub, e, true)
			}
		}
	}
}

func inlineValue(v any) string {
	switch v := v.(type) {
	case string:
		return tomlString(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return tomlFloat(v)
	case bool:
		return strconv.FormatBool(v)
	case time.Time:
		return tomlTime(v)
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = inlineValue(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case []*table:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = inlineValue(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case *table:
		if len(v.keys) == 0 {
			return "{}"
		}
		parts := make([]string, len(v.keys))
		for i, k := range v.keys {
			parts[i] = tomlKey(k) + " = " + inlineValue(v.vals[k])
		}
		return "{ " + strings.Join(parts, ", ") + " }"
	}
	return fmt.Sprint(v)
}

func tomlFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		if math.Signbit(f) {
			return "-nan"
		}
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".") {
		s += ".0"
	}
	return s
}

func tomlTime(t time.Time) string {
	frac := ""
	if ns := t.Nanosecond(); ns != 0 {
		frac = "." + strings.TrimRight(fmt.Sprintf("%09d", ns), "0")
	}
	switch t.Location().String() {
	case "date-local":
		return t.Format("2006-01-02")
	case "time-local":
		return t.Format("15:04:05") + frac
	case "datetime-local":
		return t.Format("2006-01-02T15:04:05") + frac
	}
	s := t.Format("2006-01-02T15:04:05") + frac
	if t.Location() == time.UTC {
		return s + "Z"
	}
	return s + t.Format("-07:00")
}

// strMetrics are what decides how a string is quoted.
type strMetrics struct {
	maxSingle, maxDouble int
	controls             bool // a control character other than tab and newline
	backslash, newline   bool
}

func measure(s string) strMetrics {
	var m strMetrics
	single, double := 0, 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\'' {
			single++
			m.maxSingle = max(m.maxSingle, single)
		} else {
			single = 0
		}
		if c == '"' {
			double++
			m.maxDouble = max(m.maxDouble, double)
		} else {
			double = 0
		}
		switch {
		case c == '\\':
			m.backslash = true
		case c == '\t':
		case c == '\n':
			m.newline = true
		case c <= 0x1f || c == 0x7f:
			m.controls = true
		}
	}
	return m
}

// tomlString quotes a string value: basic when nothing needs escaping, else
// literal, else multi-line basic, else multi-line literal, else escaped.
func tomlString(s string) string {
	m := measure(s)
	switch {
	case !m.controls && !m.backslash && m.maxDouble == 0 && !m.newline:
		return quoteBasic(s, false)
	case !m.controls && m.maxSingle == 0 && !m.newline:
		return "'" + s + "'"
	case !m.controls && !m.backslash && m.maxDouble <= 2:
		return quoteBasic(s, true)
	case !m.controls && m.maxSingle <= 2:
		if m.newline {
			return "'''\n" + s + "'''"
		}
		return "'''" + s + "'''"
	}
	return quoteBasic(s, m.newline)
}

func quoteBasic(s string, multiline bool) string {
	var b strings.Builder
	delim, maxQuotes := `"`, 0
	if multiline {
		delim, maxQuotes = `"""`, 2
	}
	b.WriteString(delim)
	if multiline && strings.Contains(s, "\n") {
		b.WriteByte('\n')
	}
	quotes := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '"' {
			quotes++
			if quotes > maxQuotes {
				b.WriteString(`\"`)
				quotes = 0
				continue
			}
		} else {
			quotes = 0
		}
		switch {
		case c == '\b':
			b.WriteString(`\b`)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\n' && !multiline:
			b.WriteString(`\n`)
		case c == '\f':
			b.WriteString(`\f`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\\':
			b.WriteString(`\\`)
		case c != '\n' && (c <= 0x1f || c == 0x7f):
			fmt.Fprintf(&b, `\u%04X`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteString(delim)
	return b.String()
}

// tomlKey writes a key bare when it can, else quoted as a string without
// multi-line forms.
func tomlKey(k string) string {
	bare := k != ""
	single, double, backslash, controls := false, false, false, false
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			bare = false
		}
		switch {
		case c == '\'':
			single = true
		case c == '"':
			double = true
		case c == '\\':
			backslash = true
		case c == '\t':
		case c <= 0x1f || c == 0x7f:
			controls = true
		}
	}
	switch {
	case bare:
		return k
	case !controls && !backslash && !double:
		return `"` + k + `"`
	case !controls && !single:
		return "'" + k + "'"
	}
	return quoteBasic(k, false)
}
