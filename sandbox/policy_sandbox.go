package sandbox

import (
	"encoding/json"

	"github.com/codexec/codex/wire"
)

// Sandbox is the wire `sandbox` object of process/start and the fs methods
// (docs/protocol.md §8.1). Paths are native absolute paths; empty means absent.
// The windows* members and useLegacyLandlock are accepted and ignored.
type Sandbox struct {
	Permissions    Profile
	Cwd            string
	WorkspaceRoots []string
	// PolicyContext, sent by fs methods, takes precedence over Cwd and
	// WorkspaceRoots when present.
	PolicyContext *PolicyContext
	// UserHomeDir anchors `~/` deny globs.
	UserHomeDir string
}

// PolicyContext is the fs methods' `policyContext` member.
type PolicyContext struct {
	Cwd            string
	WorkspaceRoots []string
}

// ParseSandbox parses the wire sandbox object. Absent or null gives (nil,
// nil): no sandbox. A missing `permissions` member is the default profile,
// which denies everything. Errors wrap ErrInvalidPolicy; a malformed path
// also carries its wire error (wire.ParsePath), so its code survives.
func ParseSandbox(raw json.RawMessage) (*Sandbox, error) {
	obj, err := object(raw, "sandbox")
	if err != nil || obj == nil {
		return nil, err
	}
	s := &Sandbox{}
	if perm := obj["permissions"]; len(perm) > 0 && !isNull(perm) {
		if s.Permissions, err = ParseProfile(perm); err != nil {
			return nil, err
		}
	}
	if s.Cwd, err = pathMember(obj["cwd"]); err != nil {
		return nil, err
	}
	if s.WorkspaceRoots, err = pathList(obj["workspaceRoots"]); err != nil {
		return nil, err
	}
	if s.UserHomeDir, err = pathMember(obj["userHomeDir"]); err != nil {
		return nil, err
	}
	pc, err := object(obj["policyContext"], "policyContext")
	if err != nil {
		return nil, err
	}
	if pc != nil {
		s.PolicyContext = &PolicyContext{}
		if s.PolicyContext.Cwd, err = pathMember(pc["cwd"]); err != nil {
			return nil, err
		}
		if s.PolicyContext.WorkspaceRoots, err = pathList(pc["workspaceRoots"]); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// UnmarshalJSON implements json.Unmarshaler with ParseSandbox; null leaves
// the zero value.
func (s *Sandbox) UnmarshalJSON(b []byte) error {
	v, err := ParseSandbox(b)
	if err != nil || v == nil {
		return err
	}
	*s = *v
	return nil
}

// pathMember parses an optional wire path.
func pathMember(raw json.RawMessage) (string, error) {
	var s string
	if err := optional(raw, &s, "sandbox path"); err != nil || s == "" {
		return "", err
	}
	p, err := wire.ParsePath(s)
	if err != nil {
		return "", invalidCause(err)
	}
	return p.Native, nil
}

// pathList parses an optional list of wire paths.
func pathList(raw json.RawMessage) ([]string, error) {
	var list []string
	if err := optional(raw, &list, "sandbox path list"); err != nil {
		return nil, err
	}
	var out []string
	for _, s := range list {
		p, err := wire.ParsePath(s)
		if err != nil {
			return nil, invalidCause(err)
		}
		out = append(out, p.Native)
	}
	return out, nil
}

// Wire shapes used for marshalling.
type (
	sandboxJSON struct {
		Permissions    Profile            `json:"permissions"`
		Cwd            string             `json:"cwd,omitempty"`
		WorkspaceRoots []string           `json:"workspaceRoots,omitempty"`
		PolicyContext  *policyContextJSON `json:"policyContext,omitempty"`
		UserHomeDir    string             `json:"userHomeDir,omitempty"`
	}
	policyContextJSON struct {
		Cwd            string   `json:"cwd,omitempty"`
		WorkspaceRoots []string `json:"workspaceRoots,omitempty"`
	}
)

// MarshalJSON writes the wire object with file:// URIs, as the reference
// client does.
func (s Sandbox) MarshalJSON() ([]byte, error) {
	out := sandboxJSON{
		Permissions:    s.Permissions,
		Cwd:            uri(s.Cwd),
		WorkspaceRoots: uris(s.WorkspaceRoots),
		UserHomeDir:    uri(s.UserHomeDir),
	}
	if s.PolicyContext != nil {
		out.PolicyContext = &policyContextJSON{Cwd: uri(s.PolicyContext.Cwd), WorkspaceRoots: uris(s.PolicyContext.WorkspaceRoots)}
	}
	return json.Marshal(out)
}

// uri converts a native path to a file:// URI; "" stays "".
func uri(p string) string {
	if p == "" {
		return ""
	}
	return wire.FileURI(p)
}

// uris converts native paths to file:// URIs.
func uris(ps []string) []string {
	var out []string
	for _, p := range ps {
		out = append(out, wire.FileURI(p))
	}
	return out
}
