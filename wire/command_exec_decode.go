package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/codexec/codex/rpc"
)

// The command/exec family answers undecodable params with serde's messages
// (docs/protocol.md §12.1): members are checked in the order they appear, unknown members are
// ignored, and a missing required member is reported after the others.

// members returns the members of a JSON object in document order. Absent or
// null params are the "missing field `params`" error.
func members(raw json.RawMessage) ([]string, []json.RawMessage, *rpc.Error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, ErrInvalidRequestDecode("missing field `params`")
	}
	if raw[0] != '{' {
		return nil, nil, ErrInvalidRequestDecode("invalid type: " + serdeKind(raw) + ", expected struct")
	}
	if keys, vals, ok := fastMembers(raw); ok {
		return keys, vals, nil
	}
	return tokenMembers(raw)
}

// tokenMembers is members through json.Decoder's tokens, whose errors are
// the messages for invalid input.
func tokenMembers(raw json.RawMessage) ([]string, []json.RawMessage, *rpc.Error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if _, err := d.Token(); err != nil {
		return nil, nil, ErrInvalidRequestDecode(err.Error())
	}
	var keys []string
	var vals []json.RawMessage
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return nil, nil, ErrInvalidRequestDecode(err.Error())
		}
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return nil, nil, ErrInvalidRequestDecode(err.Error())
		}
		keys = append(keys, t.(string))
		vals = append(vals, v)
	}
	return keys, vals, nil
}

// serdeKind describes a JSON value as serde's "invalid type" does.
func serdeKind(raw json.RawMessage) string {
	switch raw[0] {
	case '"':
		var s string
		_ = json.Unmarshal(raw, &s)
		return "string " + strconv.Quote(s)
	case 't', 'f':
		return "boolean `" + string(raw) + "`"
	case 'n':
		return "null"
	case '[':
		return "sequence"
	case '{':
		return "map"
	}
	if bytes.ContainsAny(raw, ".eE") {
		f, _ := strconv.ParseFloat(string(raw), 64)
		return "floating point `" + strconv.FormatFloat(f, 'f', -1, 64) + "`"
	}
	return "integer `" + string(raw) + "`"
}

func typeErr(raw json.RawMessage, want string) *rpc.Error {
	return ErrInvalidRequestDecode("invalid type: " + serdeKind(raw) + ", expected " + want)
}

func isNull(raw json.RawMessage) bool { return string(raw) == "null" }

func decodeString(raw json.RawMessage, want string) (string, *rpc.Error) {
	if s, ok := plainString(raw); ok {
		return s, nil
	}
	var s string
	if raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", typeErr(raw, want)
	}
	return s, nil
}

func decodeOptString(raw json.RawMessage, want string) (*string, *rpc.Error) {
	if isNull(raw) {
		return nil, nil
	}
	s, err := decodeString(raw, want)
	return &s, err
}

func decodeBool(raw json.RawMessage) (bool, *rpc.Error) {
	switch string(raw) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, typeErr(raw, "a boolean")
}

// decodeInt decodes an integer in [lo, hi] named want (usize, i64, u16).
func decodeInt(raw json.RawMessage, lo, hi float64, want string) (int64, uint64, *rpc.Error) {
	if raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') || bytes.ContainsAny(raw, ".eE") {
		return 0, 0, typeErr(raw, want)
	}
	if raw[0] == '-' {
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil {
			return 0, 0, ErrInvalidRequestDecode(fmt.Sprintf("invalid type: integer `%s` as i128, expected any value", raw))
		}
		if float64(n) < lo {
			return 0, 0, ErrInvalidRequestDecode(fmt.Sprintf("invalid value: integer `%d`, expected %s", n, want))
		}
		return n, 0, nil
	}
	u, err := strconv.ParseUint(string(raw), 10, 64)
	if err != nil {
		return 0, 0, ErrInvalidRequestDecode(fmt.Sprintf("invalid type: integer `%s` as u128, expected any value", raw))
	}
	if float64(u) > hi {
		return 0, 0, ErrInvalidRequestDecode(fmt.Sprintf("invalid value: integer `%d`, expected %s", u, want))
	}
	return int64(u), u, nil
}

func decodeSize(raw json.RawMessage) (*TermSize, *rpc.Error) {
	if isNull(raw) {
		return nil, nil
	}
	if raw[0] != '{' {
		return nil, typeErr(raw, "struct CommandExecTerminalSize")
	}
	keys, vals, err := members(raw)
	if err != nil {
		return nil, err
	}
	var s TermSize
	var rows, cols bool
	for i, k := range keys {
		if k != "rows" && k != "cols" {
			continue
		}
		_, u, err := decodeInt(vals[i], 0, math.MaxUint16, "u16")
		if err != nil {
			return nil, err
		}
		if k == "rows" {
			s.Rows, rows = uint16(u), true
		} else {
			s.Cols, cols = uint16(u), true
		}
	}
	switch {
	case !rows:
		return nil, ErrInvalidRequestDecode("missing field `rows`")
	case !cols:
		return nil, ErrInvalidRequestDecode("missing field `cols`")
	}
	return &s, nil
}

func decodeEnv(raw json.RawMessage) (map[string]*string, *rpc.Error) {
	if isNull(raw) {
		return nil, nil
	}
	if raw[0] != '{' {
		return nil, typeErr(raw, "a map")
	}
	keys, vals, err := members(raw)
	if err != nil {
		return nil, err
	}
	env := make(map[string]*string, len(keys))
	for i, k := range keys {
		v, err := decodeOptString(vals[i], "a string")
		if err != nil {
			return nil, err
		}
		env[k] = v
	}
	return env, nil
}

func decodeCommand(raw json.RawMessage) ([]string, *rpc.Error) {
	if raw[0] != '[' {
		return nil, typeErr(raw, "a sequence")
	}
	if !json.Valid(raw) {
		return nil, typeErr(raw, "a sequence")
	}
	items := fastItems(raw)
	argv := make([]string, len(items))
	for i, it := range items {
		s, err := decodeString(it, "a string")
		if err != nil {
			return nil, err
		}
		argv[i] = s
	}
	return argv, nil
}
