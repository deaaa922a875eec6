package rpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
)

// DecodeParams decodes request params into v, a pointer to a struct, the way
// the reference's decoder reports problems: every failure is a -32602 error,
// fields tagged `rpc:"required"` must be present ("missing field `x`"), and
// unknown members are ignored. Absent or null params decode as `{}`.
func DecodeParams(raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	switch raw[0] {
	case '{':
	case '[':
		return Errorf(CodeInvalidParams, "invalid type: sequence, expected struct")
	default:
		return Errorf(CodeInvalidParams, "invalid type: %s, expected struct", jsonKind(raw))
	}
	if req := requiredFields(reflect.TypeOf(v).Elem()); len(req) > 0 {
		missing, ok := missingMember(raw, req)
		if !ok { // invalid JSON or an escaped key: decode the members to tell
			var present map[string]json.RawMessage
			if err := json.Unmarshal(raw, &present); err != nil {
				return decodeError(err)
			}
			missing = ""
			for _, name := range req {
				if _, ok := present[name]; !ok {
					missing = name
					break
				}
			}
		}
		if missing != "" {
			return Errorf(CodeInvalidParams, "missing field `%s`", missing)
		}
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return decodeError(err)
	}
	return nil
}

// DecodeNoParams accepts absent, null or `{}` params and refuses anything
// else, as the reference does for methods without params.
func DecodeNoParams(raw json.RawMessage) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	switch raw[0] {
	case '{':
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return decodeError(err)
		}
		if len(m) == 0 {
			return nil
		}
		return Errorf(CodeInvalidParams, "invalid type: map, expected unit")
	case '[':
		return Errorf(CodeInvalidParams, "invalid type: sequence, expected unit")
	default:
		return Errorf(CodeInvalidParams, "invalid type: %s, expected unit", jsonKind(raw))
	}
}

func decodeError(err error) error {
	var we *Error
	if errors.As(err, &we) {
		return we
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := ""
		if te.Field != "" {
			field = " at `" + te.Field + "`"
		}
		return Errorf(CodeInvalidParams, "invalid type: %s, expected %s%s", te.Value, te.Type, field)
	}
	return Errorf(CodeInvalidParams, "%s", strings.TrimPrefix(err.Error(), "json: "))
}

func jsonKind(raw json.RawMessage) string {
	switch raw[0] {
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	default:
		return fmt.Sprintf("number %s", raw)
	}
}

var requiredCache sync.Map // reflect.Type -> []string

// requiredFields lists the JSON names of the fields tagged `rpc:"required"`.
func requiredFields(t reflect.Type) []string {
	if v, ok := requiredCache.Load(t); ok {
		return v.([]string)
	}
	var names []string
	if t.Kind() == reflect.Struct {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if f.Tag.Get("rpc") != "required" {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" {
				name = f.Name
			}
			names = append(names, name)
		}
	}
	requiredCache.Store(t, names)
	return names
}

// missingMember returns the first name of req (in req's order) that is not
// a member of the JSON object raw, or "" if all are, without decoding
// anything: every request with required fields passes here, and a map of
// its members was garbage of the size of the request. ok is false when it
// cannot tell that way: raw is not valid JSON, holds more than 64 required
// names, or a member name holds an escape (which the decoder would
// unescape before comparing).
func missingMember(raw []byte, req []string) (missing string, ok bool) {
	if len(req) > 64 || !json.Valid(raw) {
		return "", false
	}
	var found uint64
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return "", false
	}
	i = skipSpace(raw, i+1)
	for i < len(raw) && raw[i] == '"' {
		end := i + 1
		for end < len(raw) && raw[end] != '"' {
			if raw[end] == '\\' {
				return "", false
			}
			end++
		}
		key := raw[i+1 : end]
		for k, name := range req {
			if string(key) == name {
				found |= 1 << k
			}
		}
		i = skipSpace(raw, end+1) // at ':'
		i = skipValue(raw, skipSpace(raw, i+1))
		i = skipSpace(raw, i) // at ',' or '}'
		if i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
			continue
		}
		break
	}
	for k, name := range req {
		if found&(1<<k) == 0 {
			return name, true
		}
	}
	return "", true
}

// skipSpace returns the index of the first non-space byte of raw at or
// after i.
func skipSpace(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just past the JSON value starting at i of
// raw, which is valid JSON. (package wire's fast decoders scan the same
// way; rpc imports nothing of ours, so each keeps its own few lines.)
func skipValue(raw []byte, i int) int {
	depth := 0
	for i < len(raw) {
		switch c := raw[i]; c {
		case '"':
			i++
			for i < len(raw) && raw[i] != '"' {
				if raw[i] == '\\' {
					i++
				}
				i++
			}
			i++
			if depth == 0 {
				return i
			}
			continue
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
		case ',':
			if depth == 0 {
				return i
			}
		case ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i
			}
		}
		i++
	}
	return i
}
