package config

import (
	"errors"
	"fmt"
	"strings"

	"github.com/BurntSushi/toml"
)

// Override is one `-c key=value` of the command line: a dotted key path
// and its value, which replaces what config.toml says there.
type Override struct {
	Path  []string
	Value any
	raw   string // the argument as given
}

// Key is the override's dotted key.
func (o Override) Key() string { return strings.Join(o.Path, ".") }

// ParseOverride reads `-c key=value` as the Codex CLI does: the key is
// split at its dots (no quoting: a segment is taken as written) and the
// value is parsed as a TOML value, else taken as a literal string (so
// `-c model=o3` needs no quotes). Both halves are trimmed. The errors
// have the Codex CLI's texts.
func ParseOverride(s string) (Override, error) {
	key, value, ok := strings.Cut(s, "=")
	if !ok {
		//lint:ignore ST1005 the exact text the Codex CLI prints
		return Override{}, fmt.Errorf("Invalid override (missing '='): %s", s)
	}
	key, value = strings.TrimSpace(key), strings.TrimSpace(value)
	if key == "" {
		//lint:ignore ST1005 the exact text the Codex CLI prints
		return Override{}, fmt.Errorf("Empty key in override: %s", s)
	}
	return Override{Path: strings.Split(key, "."), Value: tomlValue(value), raw: s}, nil
}

// tomlValue parses s as a TOML value, or returns it as a string when it is
// not one.
func tomlValue(s string) any {
	var doc map[string]any
	if _, err := toml.Decode("_x_ = "+s, &doc); err == nil {
		if v, ok := doc["_x_"]; ok {
			return v
		}
	}
	return s
}

// applyOverrides sets each override's value in the decoded document, in
// order (a later one wins), creating the tables on its path and replacing
// a value that stands where a table must.
func applyOverrides(doc map[string]any, overrides []Override) {
	for _, o := range overrides {
		t := doc
		for _, seg := range o.Path[:len(o.Path)-1] {
			next, ok := t[seg].(map[string]any)
			if !ok {
				next = map[string]any{}
				t[seg] = next
			}
			t = next
		}
		t[o.Path[len(o.Path)-1]] = o.Value
	}
}

// errUnknownFeature is the Codex CLI's answer to --enable or --disable of
// a name it does not know.
//
//lint:ignore ST1005 the exact text the Codex CLI prints
var errUnknownFeature = errors.New("Unknown feature flag")

// FeatureOverride turns --enable NAME (on) or --disable NAME into the
// override `features.NAME = on`, as the Codex CLI does; a name the Codex
// CLI 0.169.0 does not know is refused with its text.
func FeatureOverride(name string, on bool) (Override, error) {
	if !knownFeature(name) {
		return Override{}, fmt.Errorf("%w: %s", errUnknownFeature, name)
	}
	flag := "--disable"
	if on {
		flag = "--enable"
	}
	return Override{Path: []string{"features", name}, Value: on, raw: flag + " " + name}, nil
}
