package unifiedexec

import (
	"encoding/json"

	"github.com/codexec/codex/wire"
)

// Typed builders of the wire sandbox object (docs/protocol.md §8.1) for
// StartOptions.Sandbox and the sandbox argument of the fs methods: the
// three modes of `codex exec run --sandbox` and of the Codex CLI. Any other
// policy (network on, extra writable paths, deny globs: docs/sandbox.md
// §2.1) is written as raw JSON in the same place; nil means no sandbox.
// The builders do not check their paths: the server answers a relative
// one with its -32602 error.

// The permission profiles of the three modes, as the server's sandbox
// package writes them (docs/sandbox.md §3.6; TestSandboxBuildersMatchModes).
const (
	readOnlyProfile = `{"type":"managed","file_system":{"type":"restricted","entries":[` +
		`{"path":{"type":"special","value":{"kind":"root"}},"access":"read"}]},"network":"restricted"}`
	workspaceWriteProfile = `{"type":"managed","file_system":{"type":"restricted","entries":[` +
		`{"path":{"type":"special","value":{"kind":"root"}},"access":"read"},` +
		`{"path":{"type":"special","value":{"kind":"project_roots"}},"access":"write"},` +
		`{"path":{"type":"special","value":{"kind":"slash_tmp"}},"access":"write"},` +
		`{"path":{"type":"special","value":{"kind":"tmpdir"}},"access":"write"},` +
		`{"path":{"type":"special","value":{"kind":"project_roots","subpath":".git"}},"access":"read","missing_path_behavior":"skip"},` +
		`{"path":{"type":"special","value":{"kind":"project_roots","subpath":".agents"}},"access":"read","missing_path_behavior":"skip"},` +
		`{"path":{"type":"special","value":{"kind":"project_roots","subpath":".codex"}},"access":"read","missing_path_behavior":"skip"}]},` +
		`"network":"restricted"}`
	dangerFullAccessProfile = `{"type":"managed","file_system":{"type":"unrestricted"},"network":"enabled"}`
)

// ReadOnly returns the sandbox of the read-only mode: every file readable,
// none writable, no network.
func ReadOnly() json.RawMessage { return sandboxObject(readOnlyProfile, nil) }

// WorkspaceWrite returns the sandbox of the workspace-write mode: every
// file readable; the workspace roots, /tmp and $TMPDIR writable, except
// the roots' .git, .agents and .codex; no network. roots are absolute
// paths or file:// URIs; without any, the workspace is the process's
// working directory (StartOptions.Cwd, else the server's). An fs call
// has no working directory of its own: name its roots.
func WorkspaceWrite(roots ...string) json.RawMessage {
	return sandboxObject(workspaceWriteProfile, roots)
}

// DangerFullAccess returns the sandbox of the danger-full-access mode: no
// restriction and network on. Unlike a nil sandbox, the process still runs
// through the server's sandbox helper (docs/protocol.md §8.2).
func DangerFullAccess() json.RawMessage { return sandboxObject(dangerFullAccessProfile, nil) }

// sandboxObject returns {"permissions": profile, "workspaceRoots": roots},
// the roots as file:// URIs (a path that is not absolute is sent as it is).
func sandboxObject(profile string, roots []string) json.RawMessage {
	obj := struct {
		Permissions    json.RawMessage `json:"permissions"`
		WorkspaceRoots []string        `json:"workspaceRoots,omitempty"`
	}{Permissions: json.RawMessage(profile)}
	for _, r := range roots {
		if p, err := wire.ParsePath(r); err == nil {
			r = wire.FileURI(p.Native)
		}
		obj.WorkspaceRoots = append(obj.WorkspaceRoots, r)
	}
	b, _ := json.Marshal(obj) // cannot fail: a valid profile and strings
	return b
}
