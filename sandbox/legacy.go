package sandbox

import (
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/codexec/codex/wire"
)

// PolicyMode is the kind of a legacy SandboxPolicy, in the core kebab-case
// spelling.
type PolicyMode string

// Legacy policy kinds (docs/sandbox.md §2.2).
const (
	PolicyDangerFullAccess PolicyMode = "danger-full-access"
	PolicyReadOnly         PolicyMode = "read-only"
	PolicyWorkspaceWrite   PolicyMode = "workspace-write"
	PolicyExternalSandbox  PolicyMode = "external-sandbox"
)

// Policy is a legacy SandboxPolicy, the single-enum form that predates
// PermissionProfile. It is still accepted everywhere and converted with
// Profile (docs/sandbox.md §3.6).
type Policy struct {
	Mode PolicyMode
	// WritableRoots are extra absolute writable directories
	// (workspace-write).
	WritableRoots []string
	// NetworkAccess is network_access; for external-sandbox it is true
	// for "enabled".
	NetworkAccess       bool
	ExcludeTmpdirEnvVar bool
	ExcludeSlashTmp     bool
}

// ParsePolicy parses a legacy SandboxPolicy in the core spelling
// (kebab-case tags, snake_case fields, docs/sandbox.md §2.2) or the app-server
// v2 spelling (camelCase, docs/sandbox.md §2.3). Every field defaults. The restricted forms
// of the intermediate read-access fields are rejected with the reference's
// messages; their fullAccess form is accepted and dropped. Errors wrap
// ErrInvalidPolicy.
func ParsePolicy(raw json.RawMessage) (Policy, error) {
	obj, err := object(raw, "sandbox policy")
	if err != nil {
		return Policy{}, err
	}
	if obj == nil {
		return Policy{}, invalidf("invalid sandbox policy: expected an object")
	}
	typ, err := stringMember(obj, "type", "sandbox policy")
	if err != nil {
		return Policy{}, err
	}
	var p Policy
	switch typ {
	case "danger-full-access", "dangerFullAccess":
		p.Mode = PolicyDangerFullAccess
	case "read-only", "readOnly":
		p.Mode = PolicyReadOnly
		if err := rejectRestrictedRead(member(obj, "access", "access"),
			"readOnly.access is no longer supported; use permissionProfile for restricted reads"); err != nil {
			return Policy{}, err
		}
	case "workspace-write", "workspaceWrite":
		p.Mode = PolicyWorkspaceWrite
		if err := rejectRestrictedRead(member(obj, "read_only_access", "readOnlyAccess"),
			"workspaceWrite.readOnlyAccess is no longer supported; use permissionProfile for restricted reads"); err != nil {
			return Policy{}, err
		}
		var roots []string
		if err := optional(member(obj, "writable_roots", "writableRoots"), &roots, "writable_roots"); err != nil {
			return Policy{}, err
		}
		for _, s := range roots {
			path, err := wire.ParsePath(s)
			if err != nil {
				return Policy{}, invalidCause(err)
			}
			p.WritableRoots = append(p.WritableRoots, path.Native)
		}
		if err := optional(member(obj, "exclude_tmpdir_env_var", "excludeTmpdirEnvVar"), &p.ExcludeTmpdirEnvVar, "exclude_tmpdir_env_var"); err != nil {
			return Policy{}, err
		}
		if err := optional(member(obj, "exclude_slash_tmp", "excludeSlashTmp"), &p.ExcludeSlashTmp, "exclude_slash_tmp"); err != nil {
			return Policy{}, err
		}
	case "external-sandbox", "externalSandbox":
		p.Mode = PolicyExternalSandbox
		network, err := parseNetwork(member(obj, "network_access", "networkAccess"))
		if err != nil {
			return Policy{}, err
		}
		p.NetworkAccess = network == NetworkEnabled
		return p, nil
	default:
		return Policy{}, invalidf("unknown sandbox policy type `%s`", typ)
	}
	if p.Mode != PolicyDangerFullAccess {
		if err := optional(member(obj, "network_access", "networkAccess"), &p.NetworkAccess, "network_access"); err != nil {
			return Policy{}, err
		}
	}
	return p, nil
}

// member returns the member spelled snake or camel, whichever is present.
func member(obj map[string]json.RawMessage, snake, camel string) json.RawMessage {
	if v, ok := obj[snake]; ok {
		return v
	}
	return obj[camel]
}

// rejectRestrictedRead accepts an absent or fullAccess read-access field
// and rejects anything else with msg.
func rejectRestrictedRead(raw json.RawMessage, msg string) error {
	if len(raw) == 0 || isNull(raw) {
		return nil
	}
	var access struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(raw, &access); err == nil {
		switch access.Type {
		case "fullAccess", "full-access", "full_access":
			return nil
		}
	}
	return invalidf("%s", msg)
}

// Profile converts the legacy policy per docs/sandbox.md §3.6.
func (p Policy) Profile() Profile {
	if p.Mode == PolicyExternalSandbox {
		return ExternalSandbox(p.NetworkAccess)
	}
	prof, err := ModeProfile(string(p.Mode), ModeOptions{
		WritableRoots: p.WritableRoots, Network: p.NetworkAccess,
		ExcludeTmpdirEnvVar: p.ExcludeTmpdirEnvVar, ExcludeSlashTmp: p.ExcludeSlashTmp,
	})
	if err != nil {
		return ReadOnly(p.NetworkAccess) // fail closed: the narrowest mode
	}
	return prof
}

// WritableRootsFor lists a workspace-write policy's writable roots in the
// legacy order: the configured roots, then cwd, then /tmp (if it is a
// directory and not excluded), then tmpDir (if non-empty, absolute and not
// excluded). Other modes have none.
func (p Policy) WritableRootsFor(cwd, tmpDir string) []string {
	if p.Mode != PolicyWorkspaceWrite {
		return nil
	}
	roots := append([]string(nil), p.WritableRoots...)
	if cwd != "" {
		roots = append(roots, cwd)
	}
	if !p.ExcludeSlashTmp {
		if fi, err := os.Stat("/tmp"); err == nil && fi.IsDir() {
			roots = append(roots, "/tmp")
		}
	}
	if !p.ExcludeTmpdirEnvVar && filepath.IsAbs(tmpDir) {
		roots = append(roots, tmpDir)
	}
	return roots
}

// Legacy projects the profile onto a legacy policy for the policy cwd, as
// the reference does. The projection is exact for the profiles Policy.Profile
// returns; otherwise it drops what the legacy form cannot say (deny
// entries, globs, restricted reads, unknown special paths). Writes outside
// the workspace root that the legacy form cannot express are an error.
func (p Profile) Legacy(cwd string) (Policy, error) {
	switch p.mode() {
	case fsExternal:
		return Policy{Mode: PolicyExternalSandbox, NetworkAccess: p.Network == NetworkEnabled}, nil
	case fsUnrestricted:
		if p.FullNetwork() {
			return Policy{Mode: PolicyDangerFullAccess}, nil
		}
		return Policy{Mode: PolicyExternalSandbox}, nil
	}
	var (
		fullWrite, workspace, tmpdir, slashTmp bool
		roots                                  []string
	)
	for _, e := range p.Entries {
		if e.Access != AccessWrite {
			continue
		}
		switch e.Path.Type {
		case PathAbsolute:
			if cwd != "" && e.Path.Path == filepath.Clean(cwd) {
				workspace = true
			} else {
				roots = append(roots, e.Path.Path)
			}
		case PathSpecial:
			switch e.Path.Kind {
			case SpecialRoot:
				fullWrite = true
			case SpecialProjectRoots:
				if e.Path.Subpath == "" {
					workspace = true
				} else if cwd != "" {
					roots = append(roots, joinSubpath(cwd, e.Path.Subpath))
				}
			case SpecialTmpdir:
				tmpdir = true
			case SpecialSlashTmp:
				slashTmp = true
			}
		}
	}
	network := p.FullNetwork()
	switch {
	case fullWrite:
		if network {
			return Policy{Mode: PolicyDangerFullAccess}, nil
		}
		return Policy{Mode: PolicyExternalSandbox}, nil
	case workspace:
		return Policy{
			Mode:                PolicyWorkspaceWrite,
			WritableRoots:       dedup(roots),
			NetworkAccess:       network,
			ExcludeTmpdirEnvVar: !tmpdir,
			ExcludeSlashTmp:     !slashTmp,
		}, nil
	case len(roots) > 0 || tmpdir || slashTmp:
		return Policy{}, invalidf("permissions profile requests filesystem writes outside the workspace root, " +
			"which is not supported until the runtime enforces FileSystemSandboxPolicy directly")
	}
	return Policy{Mode: PolicyReadOnly, NetworkAccess: network}, nil
}

// joinSubpath joins a special path's subpath onto a base; an absolute
// subpath stands alone.
func joinSubpath(base, subpath string) string {
	if filepath.IsAbs(subpath) {
		return filepath.Clean(subpath)
	}
	return filepath.Join(base, subpath)
}
