package sandbox

import (
	"bytes"
	"encoding/json"

	"github.com/codexec/codex/wire"
)

// ParseProfile parses a PermissionProfile in any accepted shape
// (docs/sandbox.md §2.1): the tagged managed/disabled/external forms, the
// legacy untagged shapes, and the standalone `kind`-tagged file-system
// policy of docs/sandbox.md §2.4 as the file_system member. Unknown members and unknown
// special kinds are ignored. Errors wrap ErrInvalidPolicy.
func ParseProfile(raw json.RawMessage) (Profile, error) {
	obj, err := object(raw, "permission profile")
	if err != nil {
		return Profile{}, err
	}
	if obj == nil {
		return Profile{}, invalidf("invalid permission profile: expected an object")
	}
	typ, err := stringMember(obj, "type", "permission profile")
	if err != nil {
		return Profile{}, err
	}
	switch ProfileType(typ) {
	case ProfileDisabled:
		return Profile{Type: ProfileDisabled, Network: NetworkEnabled}, nil
	case ProfileExternal:
		network, err := parseNetwork(obj["network"])
		return Profile{Type: ProfileExternal, Network: network}, err
	case ProfileManaged, "":
	default:
		return Profile{}, invalidf("unknown permission profile type `%s`", typ)
	}
	p, err := parseFileSystem(obj["file_system"])
	if err != nil {
		return Profile{}, err
	}
	p.Network, err = parseNetwork(obj["network"])
	return p, err
}

// UnmarshalJSON implements json.Unmarshaler with ParseProfile.
func (p *Profile) UnmarshalJSON(b []byte) error {
	v, err := ParseProfile(b)
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// parseFileSystem parses a managed profile's file_system member. Absent or
// null means restricted with no entries.
func parseFileSystem(raw json.RawMessage) (Profile, error) {
	p := Profile{Type: ProfileManaged, FileSystem: FileSystemRestricted}
	obj, err := object(raw, "file system policy")
	if err != nil || obj == nil {
		return p, err
	}
	tag, err := stringMember(obj, "type", "file system policy")
	if err != nil {
		return p, err
	}
	if tag == "" {
		if tag, err = stringMember(obj, "kind", "file system policy"); err != nil {
			return p, err
		}
	}
	switch tag {
	case "restricted", "":
	case "unrestricted":
		p.FileSystem = FileSystemUnrestricted
		return p, nil
	case "external-sandbox", "external_sandbox", "externalSandbox":
		return Profile{Type: ProfileExternal}, nil
	default:
		return p, invalidf("unknown file system policy type `%s`", tag)
	}
	if d, ok := obj["glob_scan_max_depth"]; ok && !isNull(d) {
		var n int
		if err := json.Unmarshal(d, &n); err != nil || n < 0 {
			return p, invalidf("invalid glob_scan_max_depth: %s", d)
		}
		p.GlobScanMaxDepth = &n
	}
	var entries []json.RawMessage
	if err := optional(obj["entries"], &entries, "file system entries"); err != nil {
		return p, err
	}
	for _, raw := range entries {
		e, keep, err := parseEntry(raw)
		if err != nil {
			return p, err
		}
		if keep {
			p.Entries = append(p.Entries, e)
		}
	}
	// Legacy shape: {"read":[paths],"write":[paths]}.
	for _, list := range []struct {
		key    string
		access Access
	}{{"read", AccessRead}, {"write", AccessWrite}} {
		var paths []string
		if err := optional(obj[list.key], &paths, "file system "+list.key+" list"); err != nil {
			return p, err
		}
		for _, s := range paths {
			path, err := wire.ParsePath(s)
			if err != nil {
				return p, invalidCause(err)
			}
			p.Entries = append(p.Entries, PathEntry(path.Native, list.access))
		}
	}
	return p, nil
}

// parseEntry parses one entry. keep is false for an entry this server
// ignores: an unknown path form that grants access (ignoring it only
// narrows). An unknown path form that denies is rejected.
func parseEntry(raw json.RawMessage) (e Entry, keep bool, err error) {
	obj, err := object(raw, "file system entry")
	if err != nil {
		return e, false, err
	}
	if obj == nil {
		return e, false, invalidf("invalid file system entry: expected an object")
	}
	access, err := stringMember(obj, "access", "file system entry")
	if err != nil {
		return e, false, err
	}
	switch access {
	case "read", "write", "deny":
		e.Access = Access(access)
	case "none":
		e.Access = AccessDeny
	default:
		return e, false, invalidf("unknown file system access `%s`", access)
	}
	if e.MissingPathBehavior, err = stringMember(obj, "missing_path_behavior", "file system entry"); err != nil {
		return e, false, err
	}
	path, err := object(obj["path"], "file system path")
	if err != nil {
		return e, false, err
	}
	if path == nil {
		return e, false, invalidf("invalid file system entry: missing path")
	}
	typ, err := stringMember(path, "type", "file system path")
	if err != nil {
		return e, false, err
	}
	e.Path.Type = PathType(typ)
	switch e.Path.Type {
	case PathAbsolute:
		s, err := stringMember(path, "path", "file system path")
		if err != nil {
			return e, false, err
		}
		p, err := wire.ParsePath(s)
		if err != nil {
			return e, false, invalidCause(err)
		}
		e.Path.Path = p.Native
	case PathGlob:
		if e.Access != AccessDeny {
			return e, false, invalidf("glob file system permissions only support deny-read entries")
		}
		if e.Path.Pattern, err = stringMember(path, "pattern", "glob pattern"); err != nil {
			return e, false, err
		}
		if e.Path.Pattern == "" {
			return e, false, invalidf("invalid glob pattern: empty pattern")
		}
	case PathSpecial:
		if e.Path, err = parseSpecial(path["value"]); err != nil {
			return e, false, err
		}
	default:
		if e.Access == AccessDeny {
			return e, false, invalidf("unsupported file system path type `%s` in a deny entry", typ)
		}
		return e, false, nil
	}
	return e, true, nil
}

// parseSpecial parses a special path's value. Unknown kinds are kept
// verbatim; they resolve to nothing.
func parseSpecial(raw json.RawMessage) (EntryPath, error) {
	p := EntryPath{Type: PathSpecial}
	obj, err := object(raw, "special path")
	if err != nil {
		return p, err
	}
	if obj == nil {
		return p, invalidf("invalid special path: missing value")
	}
	kind, err := stringMember(obj, "kind", "special path")
	if err != nil {
		return p, err
	}
	if kind == "current_working_directory" {
		kind = string(SpecialProjectRoots)
	}
	p.Kind = SpecialKind(kind)
	if p.Subpath, err = stringMember(obj, "subpath", "special path"); err != nil {
		return p, err
	}
	if !p.Kind.known() {
		// The token is informational; a non-string is ignored, never fatal.
		_ = json.Unmarshal(obj["path"], &p.Token)
	}
	return p, nil
}

// parseNetwork parses "restricted"/"enabled", or the legacy
// {"enabled":bool}. Absent or null is restricted.
func parseNetwork(raw json.RawMessage) (Network, error) {
	if len(raw) == 0 || isNull(raw) {
		return NetworkRestricted, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		switch Network(s) {
		case NetworkRestricted, NetworkEnabled:
			return Network(s), nil
		}
		return "", invalidf("unknown network policy `%s`", s)
	}
	var legacy struct {
		Enabled bool `json:"enabled"`
	}
	if err := json.Unmarshal(raw, &legacy); err != nil {
		return "", invalidf("invalid network policy: %s", raw)
	}
	if legacy.Enabled {
		return NetworkEnabled, nil
	}
	return NetworkRestricted, nil
}

// object decodes raw as a JSON object; absent or null gives nil.
func object(raw json.RawMessage, what string) (map[string]json.RawMessage, error) {
	if len(raw) == 0 || isNull(raw) {
		return nil, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, invalidf("invalid %s: expected an object", what)
	}
	return obj, nil
}

// stringMember returns a string member; absent or null gives "".
func stringMember(obj map[string]json.RawMessage, key, what string) (string, error) {
	var s string
	if err := optional(obj[key], &s, what+" `"+key+"`"); err != nil {
		return "", err
	}
	return s, nil
}

// optional decodes raw into v unless it is absent or null.
func optional(raw json.RawMessage, v any, what string) error {
	if len(raw) == 0 || isNull(raw) {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return invalidf("invalid %s: %v", what, err)
	}
	return nil
}

// isNull reports whether raw is the JSON null literal.
func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

// Wire shapes used for marshalling.
type (
	profileJSON struct {
		Type       ProfileType     `json:"type"`
		FileSystem *fileSystemJSON `json:"file_system,omitempty"`
		Network    Network         `json:"network,omitempty"`
	}
	fileSystemJSON struct {
		Type             FileSystemKind `json:"type"`
		Entries          []entryJSON    `json:"entries,omitempty"`
		GlobScanMaxDepth *int           `json:"glob_scan_max_depth,omitempty"`
	}
	entryJSON struct {
		Path                pathJSON `json:"path"`
		Access              Access   `json:"access"`
		MissingPathBehavior string   `json:"missing_path_behavior,omitempty"`
	}
	pathJSON struct {
		Type    PathType     `json:"type"`
		Path    string       `json:"path,omitempty"`
		Pattern string       `json:"pattern,omitempty"`
		Value   *specialJSON `json:"value,omitempty"`
	}
	specialJSON struct {
		Kind    SpecialKind `json:"kind"`
		Path    string      `json:"path,omitempty"`
		Subpath string      `json:"subpath,omitempty"`
	}
)

// MarshalJSON writes the canonical wire form (docs/sandbox.md §2.1): tagged,
// snake_case, entry paths as file:// URIs, access "deny" for denials.
func (p Profile) MarshalJSON() ([]byte, error) {
	out := profileJSON{Type: ProfileManaged, Network: p.Network}
	if out.Network == "" {
		out.Network = NetworkRestricted
	}
	switch p.mode() {
	case fsExternal:
		out.Type = ProfileExternal
		return json.Marshal(out)
	case fsUnrestricted:
		if p.Type == ProfileDisabled {
			return json.Marshal(profileJSON{Type: ProfileDisabled})
		}
		out.FileSystem = &fileSystemJSON{Type: FileSystemUnrestricted}
		return json.Marshal(out)
	}
	fs := &fileSystemJSON{Type: FileSystemRestricted, GlobScanMaxDepth: p.GlobScanMaxDepth}
	for _, e := range p.Entries {
		ej := entryJSON{Access: e.Access, MissingPathBehavior: e.MissingPathBehavior}
		if ej.Access == "" {
			ej.Access = AccessDeny
		}
		ej.Path.Type = e.Path.Type
		switch e.Path.Type {
		case PathAbsolute:
			ej.Path.Path = wire.FileURI(e.Path.Path)
		case PathGlob:
			ej.Path.Pattern = e.Path.Pattern
		case PathSpecial:
			ej.Path.Value = &specialJSON{Kind: e.Path.Kind, Path: e.Path.Token, Subpath: e.Path.Subpath}
		}
		fs.Entries = append(fs.Entries, ej)
	}
	out.FileSystem = fs
	return json.Marshal(out)
}
