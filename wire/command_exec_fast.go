package wire

import (
	"encoding/json"
	"unicode/utf8"
)

// A fast path for the params decoders: once the params are known to be
// valid JSON (json.Valid), an object or array is split into its members by
// a plain scan instead of json.Decoder's tokens, and a string without
// escapes is taken as it is. Anything the scan does not take as it is (an
// escaped or non-ASCII key, invalid input) goes the general way, so the
// results and error messages are those of the general decoders.

// skipSpace returns the index of the first non-space byte of b at or after i.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// valueEnd returns the index just past the JSON value starting at b[i];
// b must be valid JSON.
func valueEnd(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch c := b[i]; c {
		case '"':
			i = stringEnd(b, i) - 1
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i
			}
			depth--
			if depth == 0 {
				return i + 1
			}
		case ',', ' ', '\t', '\n', '\r', ':':
			if depth == 0 {
				return i
			}
		}
	}
	return i
}

// stringEnd returns the index just past the JSON string starting at b[i].
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}

// plainString returns the JSON string raw without its quotes when it has
// no escape and is printable ASCII, which is then the decoded string.
func plainString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	s := raw[1 : len(raw)-1]
	for _, c := range s {
		if c < 0x20 || c == '\\' || c == '"' || c >= utf8.RuneSelf {
			return "", false
		}
	}
	return string(s), true
}

// fastMembers splits a valid JSON object into its keys and values in
// document order, as members does. ok is false when raw is not a valid
// object or a key is not plain; the values alias raw.
func fastMembers(raw []byte) (keys []string, vals []json.RawMessage, ok bool) {
	i := skipSpace(raw, 0)
	if i == len(raw) || raw[i] != '{' || !json.Valid(raw) {
		return nil, nil, false
	}
	for i = skipSpace(raw, i+1); i < len(raw) && raw[i] == '"'; {
		e := stringEnd(raw, i)
		k, plain := plainString(raw[i:e])
		if !plain {
			return nil, nil, false
		}
		i = skipSpace(raw, e)
		i = skipSpace(raw, i+1) // past ':'
		e = valueEnd(raw, i)
		keys, vals = append(keys, k), append(vals, raw[i:e:e])
		if i = skipSpace(raw, e); i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	return keys, vals, true
}

// fastItems splits a valid JSON array into its elements; they alias raw.
func fastItems(raw []byte) []json.RawMessage {
	var items []json.RawMessage
	for i := skipSpace(raw, 1); i < len(raw) && raw[i] != ']'; {
		e := valueEnd(raw, i)
		items = append(items, raw[i:e:e])
		if i = skipSpace(raw, e); i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	return items
}
