package execpolicy

import (
	"strings"

	"go.starlark.net/starlark"
)

// param is one parameter of a builtin: its name, the type it requires
// ("str", "list" or "bool") and whether it may be left out.
type param struct {
	name     string
	typ      string
	required bool
}

// bindArgs binds positional and named arguments to params, with the
// reference's error texts. Missing optional parameters are nil.
func bindArgs(fn string, params []param, args starlark.Tuple, kwargs []starlark.Tuple) ([]starlark.Value, error) {
	if len(args) > len(params) {
		return nil, errorf("Found %d extra positional argument(s) for call to %s", len(args)-len(params), fn)
	}
	vals := make([]starlark.Value, len(params))
	copy(vals, args)
	var extra []string
	for _, kv := range kwargs {
		name := string(kv[0].(starlark.String))
		i := paramIndex(params, name)
		if i < 0 {
			extra = append(extra, "`"+name+"`")
			continue
		}
		if vals[i] != nil {
			return nil, errorf("Argument `%s` occurs more than once", name)
		}
		vals[i] = kv[1]
	}
	if len(extra) > 0 {
		return nil, errorf("Found %s extra named parameter(s) for call to %s", strings.Join(extra, " "), fn)
	}
	for i, p := range params {
		v := vals[i]
		if v == nil {
			if p.required {
				return nil, errorf("Missing parameter `%s` for call to `%s`", p.name, fn)
			}
			continue
		}
		if !hasType(v, p.typ) {
			return nil, errorf("Type of parameter `%s` doesn't match, expected `%s`, actual `%s (repr: %s)`",
				p.name, p.typ, v.Type(), v.String())
		}
	}
	return vals, nil
}

func paramIndex(params []param, name string) int {
	for i, p := range params {
		if p.name == name {
			return i
		}
	}
	return -1
}

func hasType(v starlark.Value, typ string) bool {
	switch typ {
	case "str":
		_, ok := v.(starlark.String)
		return ok
	case "list":
		_, ok := v.(*starlark.List)
		return ok
	case "bool":
		_, ok := v.(starlark.Bool)
		return ok
	}
	return false
}

// str returns v as a Go string, or "" and false for a missing value.
func str(v starlark.Value) (string, bool) {
	s, ok := v.(starlark.String)
	return string(s), ok
}

// listItems returns the elements of a list value (nil for a missing one).
func listItems(v starlark.Value) []starlark.Value {
	l, ok := v.(*starlark.List)
	if !ok {
		return nil
	}
	out := make([]starlark.Value, l.Len())
	for i := range out {
		out[i] = l.Index(i)
	}
	return out
}
