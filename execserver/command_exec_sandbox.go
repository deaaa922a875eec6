package execserver

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"

	"github.com/codexec/codex/proc"
	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/sandbox"
	"github.com/codexec/codex/wire"
)

// netDisabledVar tells a child that its network is restricted.
const netDisabledVar = "CODEX_SANDBOX_NETWORK_DISABLED"

// execPolicy is the sandbox a command/exec asked for, parsed (docs/protocol.md §12.3).
type execPolicy struct {
	none    bool            // runs with no sandbox at all
	netOff  bool            // with none: an external sandbox restricts the network
	profile sandbox.Profile // otherwise
	atCwd   bool            // the policy cwd is the request cwd, not the server's
}

// camelPolicyMembers are the members of a v2 SandboxPolicy; others,
// snake_case ones included, are ignored as 0.169.0 does.
var camelPolicyMembers = []string{"type", "writableRoots", "networkAccess", "excludeTmpdirEnvVar", "excludeSlashTmp", "access", "readOnlyAccess"}

// parseExecPolicy parses sandboxPolicy at decoding time: its errors are
// "Invalid request: …".
func parseExecPolicy(raw map[string]any) (sandbox.Policy, *rpc.Error) {
	kept := map[string]any{}
	for _, k := range camelPolicyMembers {
		if v, ok := raw[k]; ok {
			kept[k] = v
		}
	}
	if roots, ok := kept["writableRoots"].([]any); ok && kept["type"] == "workspaceWrite" {
		for _, r := range roots {
			if s, ok := r.(string); ok && !filepath.IsAbs(s) && !strings.HasPrefix(s, "file://") {
				return sandbox.Policy{}, wire.ErrInvalidRequestDecode("AbsolutePathBuf deserialized without a base path")
			}
		}
	}
	b, _ := json.Marshal(kept)
	pol, err := sandbox.ParsePolicy(b)
	if err != nil {
		var ie *sandbox.InvalidPolicyError
		if errors.As(err, &ie) {
			return sandbox.Policy{}, wire.ErrInvalidRequestDecode(ie.Msg)
		}
		return sandbox.Policy{}, wire.ErrInvalidRequestDecode(err.Error())
	}
	return pol, nil
}

// resolveExecPolicy is check 7 of docs/protocol.md §12.2: the profile name or the policy,
// or the default permissions (":read-only": no configuration is read yet).
func resolveExecPolicy(p *wire.CommandExecParams, pol *sandbox.Policy) (execPolicy, *rpc.Error) {
	if pol != nil {
		switch pol.Mode {
		case sandbox.PolicyDangerFullAccess:
			return execPolicy{none: true}, nil
		case sandbox.PolicyExternalSandbox:
			return execPolicy{none: true, netOff: !pol.NetworkAccess}, nil
		}
		return execPolicy{profile: pol.Profile()}, nil
	}
	name := ":read-only"
	if p.PermissionProfile != nil {
		name = *p.PermissionProfile
	}
	switch name {
	case ":danger-full-access":
		return execPolicy{none: true}, nil
	case ":read-only", ":workspace":
		prof, err := sandbox.NamedProfile(name)
		if err != nil {
			return execPolicy{}, rpc.Errorf(rpc.CodeInternalError, "exec failed: %v", err)
		}
		return execPolicy{profile: prof, atCwd: p.PermissionProfile != nil}, nil
	}
	if strings.HasPrefix(name, ":") {
		return execPolicy{}, rpc.Errorf(rpc.CodeInvalidRequest, "invalid permission profile: default_permissions refers to unknown built-in profile `%s`", name)
	}
	return execPolicy{}, rpc.Errorf(rpc.CodeInvalidRequest, "invalid permission profile: default_permissions requires a `[permissions]` table")
}

// sandboxSpec puts the plan of ep into spec, with the network variable in
// its env; serverCwd anchors a sandboxPolicy and the default permissions.
func sandboxSpec(ep execPolicy, spec *proc.Spec, serverCwd string) error {
	if ep.none {
		if ep.netOff {
			spec.Env = append(slices.DeleteFunc(spec.Env, func(kv string) bool { return strings.HasPrefix(kv, netDisabledVar+"=") }), netDisabledVar+"=1")
		}
		return nil
	}
	cwd := serverCwd
	if ep.atCwd {
		cwd = spec.Dir
	}
	plan, env, err := planFor(&sandbox.Sandbox{Permissions: ep.profile, Cwd: cwd}, spec.Dir, spec.Env, true)
	if err != nil {
		return err
	}
	spec.Sandbox, spec.Env = plan, env
	return nil
}
