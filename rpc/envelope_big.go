package rpc

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
)

// Large params (an fs/writeBlock chunk, an fs/writeFile payload: a 1 MiB
// block is 1.4 MB of base64) cost encoding/json about 10 ns a byte: once to
// check the message and once more to skip the value it keeps raw. Such a
// message is almost all one or a few long strings of plain ASCII. So the
// long strings are checked by a word-at-a-time scan and taken out, and
// encoding/json decodes the rest, the structure and every other member, as
// before; the params' bytes are then cut from the message as they came.
// The result is the one json.Unmarshal gives, errors included (anything
// the fast path does not take goes the usual way).

const (
	// bigMessage is the size from which unmarshalEnvelope looks for long
	// strings: below it, encoding/json alone is as fast.
	bigMessage = 64 << 10
	// longString is the length from which a string is checked apart.
	longString = 4 << 10
)

// unmarshalEnvelope is json.Unmarshal(data, env).
func unmarshalEnvelope(data []byte, env *envelope) error {
	if len(data) >= bigMessage {
		if ok := unmarshalBig(data, env); ok {
			return nil
		}
		*env = envelope{}
	}
	return json.Unmarshal(data, env)
}

// span is a half-open byte range of the message.
type span struct{ start, end int }

// unmarshalBig decodes data into env when its long strings all lie inside
// the one top-level "params" member and are plain printable ASCII without
// escapes, and the rest is valid JSON. ok is false otherwise, env then
// undefined.
func unmarshalBig(data []byte, env *envelope) (ok bool) {
	long := longStrings(data)
	if len(long) == 0 {
		return false
	}
	// The message without the long strings' contents.
	removed := 0
	for _, s := range long {
		removed += s.end - s.start
	}
	rest := make([]byte, 0, len(data)-removed)
	prev := 0
	for _, s := range long {
		rest = append(rest, data[prev:s.start]...)
		prev = s.end
	}
	rest = append(rest, data[prev:]...)
	ps, pe, found := topLevelParams(rest)
	if !found {
		return false // a response, say: decoded the usual way
	}
	// Back to the message's offsets: every long string must lie inside
	// the params value, whose bytes are then taken as they came.
	toData := func(off int, atEnd bool) int {
		shift := 0
		for _, s := range long {
			cut := s.start - shift // where s starts in rest
			if cut < off || (atEnd && cut == off) {
				shift += s.end - s.start
			}
		}
		return off + shift
	}
	start, end := toData(ps, false), toData(pe, true)
	for _, s := range long {
		if s.start < start || s.end > end || !plainASCII(data[s.start:s.end]) {
			return false
		}
	}
	if json.Unmarshal(rest, env) != nil {
		return false
	}
	env.Params = append(json.RawMessage(nil), data[start:end]...)
	return true
}

// longStrings returns the contents (between the quotes) of the strings of
// data longer than longString bytes, in order. It stops with nil at
// anything it cannot follow without a full parse: an escape in a long
// string, or data that ends inside a string.
func longStrings(data []byte) []span {
	var out []span
	for i := 0; i < len(data); {
		q := bytes.IndexByte(data[i:], '"')
		if q < 0 {
			break
		}
		start := i + q + 1
		end := start
		for {
			k := bytes.IndexByte(data[end:], '"')
			if k < 0 {
				return nil
			}
			end += k
			if !escaped(data, start, end) {
				break
			}
			end++
		}
		if end-start >= longString {
			if bytes.IndexByte(data[start:end], '\\') >= 0 {
				return nil
			}
			out = append(out, span{start, end})
		}
		i = end + 1
	}
	return out
}

// escaped reports whether the quote at data[q] is escaped: preceded by an
// odd number of backslashes after start.
func escaped(data []byte, start, q int) bool {
	n := 0
	for j := q - 1; j >= start && data[j] == '\\'; j-- {
		n++
	}
	return n%2 == 1
}

// plainASCII reports whether b holds only bytes 0x20…0x7e other than '"'
// and '\\' (the callers' spans hold neither), eight at a time.
func plainASCII(b []byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for len(b) >= 8 {
		x := binary.LittleEndian.Uint64(b)
		// A byte below 0x20 (with its high bit clear) or with the high bit
		// set, or 0x7f (DEL: x+1 sets its high bit).
		if (x-0x20*ones)&^x&highs != 0 || x&highs != 0 || (x+ones)&highs != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}

// topLevelParams finds the value of the one top-level member named exactly
// "params" of the JSON object data; found is false when there is none,
// another key encoding/json could match to it, or data is not an object
// of valid JSON as far as it reads.
func topLevelParams(data []byte) (start, end int, found bool) {
	d := json.NewDecoder(bytes.NewReader(data))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return 0, 0, false
	}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return 0, 0, false
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return 0, 0, false
		}
		switch {
		case key == "params":
			if found {
				return 0, 0, false
			}
			end = int(d.InputOffset())
			start, found = end-len(v), true
		case bytes.EqualFold([]byte(key), []byte("params")):
			return 0, 0, false
		}
	}
	return start, end, found
}
