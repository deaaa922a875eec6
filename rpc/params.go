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
		var present map[string]json.RawMessage
		if err := json.Unmarshal(raw, &present); err != nil {
			return decodeError(err)
		}
		for _, name := range req {
			if _, ok := present[name]; !ok {
				return Errorf(CodeInvalidParams, "missing field `%s`", name)
			}
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
