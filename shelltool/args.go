package shelltool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
)

// decodeShellArgs decodes the shell tool's arguments and words a failure
// as the reference's deserializer does (its message follows "failed to
// deserialize parameters: "): members are checked in sorted key order
// (the last of duplicates wins), then the required ones in declaration
// order; unknown members are ignored. Absent or null arguments are an
// empty object.
func decodeShellArgs(raw json.RawMessage) (shellArgs, string) {
	var a shellArgs
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = []byte("{}")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return a, "invalid type: " + unexpected(raw) + ", expected struct ExecParams"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := bytes.TrimSpace(m[k])
		var msg string
		switch k {
		case "command":
			msg = decodeString(v, &a.Command)
		case "workdir":
			msg = decodeString(v, &a.Workdir)
		case "timeout_ms":
			a.TimeoutMs, msg = decodeOptionalU64(v)
		case "login":
			a.Login, msg = decodeOptionalBool(v)
		}
		if msg != "" {
			return a, msg
		}
	}
	for _, k := range []string{"command", "workdir"} {
		if _, ok := m[k]; !ok {
			return a, "missing field `" + k + "`"
		}
	}
	return a, ""
}

func decodeString(v json.RawMessage, s *string) string {
	if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, s) != nil {
		return "invalid type: " + unexpected(v) + ", expected a string"
	}
	return ""
}

func decodeOptionalU64(v json.RawMessage) (*uint64, string) {
	if bytes.Equal(v, []byte("null")) {
		return nil, ""
	}
	if n, err := strconv.ParseUint(string(v), 10, 64); err == nil {
		return &n, ""
	}
	if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
		return nil, fmt.Sprintf("invalid value: integer `%d`, expected u64", n)
	}
	return nil, "invalid type: " + unexpected(v) + ", expected u64"
}

func decodeOptionalBool(v json.RawMessage) (*bool, string) {
	if bytes.Equal(v, []byte("null")) {
		return nil, ""
	}
	var b bool
	if json.Unmarshal(v, &b) != nil {
		return nil, "invalid type: " + unexpected(v) + ", expected a boolean"
	}
	return &b, ""
}

// unexpected describes a JSON value the way the reference's errors do:
// "integer `5`", "floating point `1.5`", "string \"x\"", "boolean `true`",
// "null", "map", "sequence".
func unexpected(v json.RawMessage) string {
	if len(v) == 0 {
		return "null"
	}
	switch v[0] {
	case '{':
		return "map"
	case '[':
		return "sequence"
	case '"':
		var s string
		_ = json.Unmarshal(v, &s)
		return "string " + strconv.Quote(s)
	case 't', 'f':
		return "boolean `" + string(v) + "`"
	case 'n':
		return "null"
	}
	if _, err := strconv.ParseInt(string(v), 10, 64); err == nil {
		return "integer `" + string(v) + "`"
	}
	if _, err := strconv.ParseUint(string(v), 10, 64); err == nil {
		return "integer `" + string(v) + "`"
	}
	f, _ := strconv.ParseFloat(string(v), 64)
	if f == math.Trunc(f) && !math.IsInf(f, 0) {
		return "floating point `" + strconv.FormatFloat(f, 'f', 1, 64) + "`"
	}
	return "floating point `" + strconv.FormatFloat(f, 'g', -1, 64) + "`"
}
