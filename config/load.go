package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/codexec/codex/sandbox"
)

// FileName is the configuration file's name inside CODEX_HOME.
const FileName = "config.toml"

// Path returns $CODEX_HOME/config.toml, CODEX_HOME defaulting to
// ~/.codex; "" when neither CODEX_HOME nor a home directory is known (a
// service started with an empty environment has no configuration).
func Path() string {
	if home := os.Getenv("CODEX_HOME"); home != "" {
		return filepath.Join(home, FileName)
	}
	home, err := os.UserHomeDir()
	if err != nil || !filepath.IsAbs(home) {
		return ""
	}
	return filepath.Join(home, ".codex", FileName)
}

// Error is a configuration error: the file, the line when the TOML syntax
// is at fault (0 otherwise; with the column of an unknown key under
// --strict-config), the key when a value is, and what is wrong.
type Error struct {
	File string
	Line int
	Col  int
	Key  string
	Msg  string
	// Plain is an error whose text is Msg alone, as the Codex CLI words
	// it (a network constraint).
	Plain bool
	// Unsupported marks a setting that the Codex CLI accepts but this
	// executor cannot honour, or a wrong network value that the CLI's
	// app-server loads and refuses on the requests that use it: it makes
	// the profile that holds it unusable instead of stopping start-up.
	Unsupported bool
}

func (e *Error) Error() string {
	switch {
	case e.Plain:
		return e.Msg
	case e.Line > 0 && e.Col > 0:
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
	case e.Line > 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	case e.Key != "":
		return fmt.Sprintf("%s: %s: %s", e.File, e.Key, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// Permissions is the permission part of a configuration file. The zero
// value (and nil) is the configuration of a missing file: the default
// profile is ":read-only" and no user profile exists.
type Permissions struct {
	file        string
	defaultName string
	hasTable    bool
	profiles    map[string]*profileTOML
	home        string
	tmpdir      string          // the server's $TMPDIR, which `:tmpdir` also names
	unusable    map[string]bool // profiles validate warned about
	// proxyGate is `[features] network_proxy = true`: an enabled network
	// runs through a proxy of its own.
	proxyGate bool
	// permLine and permCol are where the file defines the permissions
	// table (0 when it does not), where a wrong network value is placed.
	permLine, permCol int
	// Warnings are things the file asks for that have no effect here
	// (unknown keys, unknown special paths).
	Warnings []string
}

// Options are what a command line adds to the file: `-c key=value`
// overrides (--enable and --disable are overrides of features.NAME), applied
// in order over the file, and --strict-config.
type Options struct {
	Overrides []Override
	// Strict refuses keys the Codex CLI does not know, in the file and in
	// the overrides, with its texts (checkStrict).
	Strict bool
}

// Load reads the permission settings of the file at path. A missing file
// (or path "") gives the defaults; an unreadable or invalid one is an
// *Error (one that cannot be read for want of permission says how to fix
// it: a server run as another user than the file's owner).
func Load(path string) (*Permissions, error) { return LoadWith(path, Options{}) }

// LoadWith is Load with the command line's overrides and strictness. Every
// profile is compiled once: what the Codex CLI refuses fails here, and a
// profile the CLI accepts but this executor cannot use is warned about
// here and refused on the requests that use it (validate).
func LoadWith(path string, opts Options) (*Permissions, error) {
	if opts.Strict {
		if err := checkStrictOverrides(opts.Overrides); err != nil {
			return nil, err
		}
	}
	raw, text, err := readFile(path, opts.Strict)
	if err != nil {
		return nil, err
	}
	p := &Permissions{file: path}
	p.permLine, p.permCol = permissionsPos(text)
	p.noteOverrides(opts.Overrides)
	applyOverrides(raw, opts.Overrides)
	p.home, _ = os.UserHomeDir()
	p.tmpdir = os.Getenv("TMPDIR")
	if err := p.read(raw); err != nil {
		return nil, err
	}
	if err := p.validate(); err != nil {
		return nil, err
	}
	return p, nil
}

// File returns the path the settings were read from ("" for nil).
func (p *Permissions) File() string {
	if p == nil {
		return ""
	}
	return p.file
}

// DefaultName is the profile a request without its own permissions runs
// under: default_permissions, or ":read-only".
func (p *Permissions) DefaultName() string {
	if p == nil || p.defaultName == "" {
		return ReadOnly
	}
	return p.defaultName
}

// errf returns an *Error about key.
func (p *Permissions) errf(key, format string, args ...any) *Error {
	return &Error{File: p.file, Key: key, Msg: fmt.Sprintf(format, args...)}
}

// unsupportedf returns an *Error about a setting the executor cannot
// honour.
func (p *Permissions) unsupportedf(key, format string, args ...any) *Error {
	e := p.errf(key, format, args...)
	e.Unsupported = true
	return e
}

// keyErr returns err, an error about the value of key, as an *Error; one
// that wraps an unsupported stays marked as such.
func (p *Permissions) keyErr(key string, err error) *Error {
	if errors.As(err, new(unsupported)) {
		return p.unsupportedf(key, "%s", err)
	}
	return p.errf(key, "%s", err)
}

// unsupported is an error about a setting the executor cannot honour.
type unsupported struct{ msg string }

func (u unsupported) Error() string { return u.msg }

// warnf records a warning about key.
func (p *Permissions) warnf(key, format string, args ...any) {
	p.Warnings = append(p.Warnings, fmt.Sprintf("%s: %s: %s", p.file, key, fmt.Sprintf(format, args...)))
}

// read takes default_permissions and the permissions tables out of the
// decoded document.
func (p *Permissions) read(raw map[string]any) error {
	p.readGate(raw)
	if v, ok := raw["default_permissions"]; ok {
		s, ok := v.(string)
		if !ok {
			return p.errf("default_permissions", "must be a string, not %s", typeName(v))
		}
		p.defaultName = s
	}
	v, ok := raw["permissions"]
	if !ok {
		return nil
	}
	table, ok := v.(map[string]any)
	if !ok {
		return p.errf("permissions", "must be a table, not %s", typeName(v))
	}
	p.hasTable = true
	p.profiles = map[string]*profileTOML{}
	for _, name := range sortedKeys(table) {
		key := "permissions." + quoteKey(name)
		if strings.HasPrefix(name, ":") {
			return p.errf(key, "permissions profile `%s` uses a reserved built-in profile prefix", name)
		}
		body, ok := table[name].(map[string]any)
		if !ok {
			return p.errf(key, "must be a table, not %s", typeName(table[name]))
		}
		prof, err := p.readProfile(key, body)
		if err != nil {
			return err
		}
		p.profiles[name] = prof
	}
	return nil
}

// ProxyGate reports `[features] network_proxy = true` (in the file, a -c
// override or --enable network_proxy): a profile with an enabled network
// runs it through a proxy of its own.
func (p *Permissions) ProxyGate() bool { return p != nil && p.proxyGate }

// readGate reads the network_proxy feature; a value that is not a boolean
// leaves it off (a narrowed network is then refused, never widened).
func (p *Permissions) readGate(raw map[string]any) {
	f, ok := raw["features"].(map[string]any)
	if !ok {
		return
	}
	v, ok := f["network_proxy"]
	if !ok {
		return
	}
	b, ok := v.(bool)
	if !ok {
		p.warnf("features.network_proxy", "must be a boolean, not %s: the feature stays off", typeName(v))
	}
	p.proxyGate = b
}

// sortedKeys returns m's keys in order, so errors and warnings are stable.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// quoteKey writes a TOML key as it would appear in a dotted key path.
func quoteKey(k string) string {
	for _, r := range k {
		if !(r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return fmt.Sprintf("%q", k)
		}
	}
	if k == "" {
		return `""`
	}
	return k
}

// typeName names a decoded TOML value's type for error messages.
func typeName(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case map[string]any:
		return "a table"
	case []any, []map[string]any:
		return "an array"
	}
	return fmt.Sprintf("a %T", v)
}

// accessOf parses a file-system access value.
func accessOf(v any) (sandbox.Access, bool) {
	s, _ := v.(string)
	switch s {
	case "read":
		return sandbox.AccessRead, true
	case "write":
		return sandbox.AccessWrite, true
	case "none", "deny":
		return sandbox.AccessDeny, true
	}
	return "", false
}
