package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/BurntSushi/toml"
)

// readFile decodes the file at path, and returns its text too: an empty
// document when path is "" or the file does not exist. A file that cannot be read, or is not TOML,
// is an *Error; with strict, so is a key the Codex CLI does not know.
func readFile(path string, strict bool) (map[string]any, string, error) {
	raw := map[string]any{}
	if path == "" {
		return raw, "", nil
	}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return raw, "", nil
	case errors.Is(err, fs.ErrPermission):
		// Whether the file exists is unknown: never run without the
		// permissions the operator may have written there.
		uid := os.Geteuid()
		return nil, "", &Error{File: path, Msg: fmt.Sprintf("cannot read it: permission denied (the server runs as uid %d); "+
			"make it and its directories readable by uid %d, or set CODEX_HOME to a directory that uid can read", uid, uid)}
	case err != nil:
		return nil, "", &Error{File: path, Msg: err.Error()}
	}
	var top map[string]toml.Primitive // the values, with their positions
	md, err := toml.Decode(string(data), &top)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, "", &Error{File: path, Line: pe.Position.Line, Msg: pe.Message}
		}
		return nil, "", &Error{File: path, Msg: err.Error()}
	}
	if strict {
		if err := checkStrictFile(path, string(data), &md, top); err != nil {
			return nil, "", err
		}
	}
	for k, prim := range top {
		var v any
		if err := md.PrimitiveDecode(prim, &v); err != nil {
			return nil, "", &Error{File: path, Key: k, Msg: err.Error()}
		}
		raw[k] = v
	}
	return raw, string(data), nil
}

// unknownKey is the first part of key the Codex CLI does not know, as a
// dotted path ("" when it knows it), and the index of its last segment: a
// top-level key (0), or a feature name under `features` (1). What lies
// below the CLI's other tables is its own to check, not ours.
func unknownKey(key []string) (string, int) {
	switch {
	case !knownTopLevel[key[0]]:
		return key[0], 0
	case key[0] == "features" && len(key) > 1 && !knownFeature(key[1]):
		return "features." + key[1], 1
	}
	return "", 0
}

// checkStrictOverrides refuses an override of a key the Codex CLI does not
// know, with its text; a whole `features` table is checked name by name.
func checkStrictOverrides(overrides []Override) error {
	for _, o := range overrides {
		bad, _ := unknownKey(o.Path)
		if t, ok := o.Value.(map[string]any); ok && bad == "" && len(o.Path) == 1 && o.Path[0] == "features" {
			for _, name := range sortedKeys(t) {
				if bad, _ = unknownKey([]string{"features", name}); bad != "" {
					break
				}
			}
		}
		if bad != "" {
			return fmt.Errorf("unknown configuration field `%s` in -c/--config override", bad)
		}
	}
	return nil
}

// checkStrictFile refuses the file's first unknown key, top-level keys
// before feature names, each in file order, as the Codex CLI does:
// `FILE:LINE:COL: unknown configuration field `KEY“.
func checkStrictFile(path, text string, md *toml.MetaData, top map[string]toml.Primitive) error {
	for depth := range 2 {
		for _, k := range md.Keys() {
			if bad, d := unknownKey(k); bad != "" && d == depth {
				line := keyLine(md, top, k)
				return &Error{File: path, Line: max(line, 1), Col: keyColumn(text, line, k[d]),
					Msg: fmt.Sprintf("unknown configuration field `%s`", bad)}
			}
		}
	}
	return nil
}

// posProbe fails to decode anything, so that the decoder's error carries
// the position of the key it was given.
type posProbe struct{}

func (posProbe) UnmarshalTOML(any) error { return errors.New("position") }

// keyLine is the line on which key is defined (0 when unknown): the TOML
// decoder keeps positions but shows them only in its errors.
func keyLine(md *toml.MetaData, top map[string]toml.Primitive, key toml.Key) int {
	prim, ok := top[key[0]]
	for _, seg := range key[1:] {
		var sub map[string]toml.Primitive
		if !ok || md.PrimitiveDecode(prim, &sub) != nil {
			return 0
		}
		prim, ok = sub[seg]
	}
	var pe toml.ParseError
	if !ok || !errors.As(md.PrimitiveDecode(prim, posProbe{}), &pe) {
		return 0
	}
	return pe.Position.Line
}

// keyColumn is the column of the key segment seg on line line of text: the
// first place it is written, quoted or bare; 1 when it is not found.
func keyColumn(text string, line int, seg string) int {
	lines := strings.Split(text, "\n")
	if line < 1 || line > len(lines) {
		return 1
	}
	l := lines[line-1]
	for _, form := range []string{`"` + seg + `"`, `'` + seg + `'`} {
		if i := strings.Index(l, form); i >= 0 {
			return i + 1
		}
	}
	for i := 0; i+len(seg) <= len(l); i++ {
		if l[i:i+len(seg)] == seg && !bareKeyByte(l, i-1) && !bareKeyByte(l, i+len(seg)) {
			return i + 1
		}
	}
	return 1
}

// bareKeyByte reports a byte of a bare TOML key at l[i].
func bareKeyByte(l string, i int) bool {
	if i < 0 || i >= len(l) {
		return false
	}
	c := l[i]
	return c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// noteOverrides warns once about each override that has no effect here:
// the executor reads default_permissions and the permissions tables;
// features and every other key belong to the Codex CLI.
func (p *Permissions) noteOverrides(overrides []Override) {
	for _, o := range overrides {
		switch {
		case o.Path[0] == "default_permissions" || o.Path[0] == "permissions":
		case o.Key() == "features.network_proxy" || len(o.Path) == 1 && o.Path[0] == "features":
		case o.Path[0] == "features":
			p.Warnings = append(p.Warnings, fmt.Sprintf("%s: feature `%s` has no effect on the exec-server, ignored", o.raw, strings.Join(o.Path[1:], ".")))
		default:
			p.Warnings = append(p.Warnings, fmt.Sprintf("%s: `%s` is not read by the exec-server (only default_permissions and [permissions]), ignored", o.raw, o.Key()))
		}
	}
}
