package execserver

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"

	"github.com/codexec/codex/config"
	"github.com/codexec/codex/netproxy"
	"github.com/codexec/codex/proc"
	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/sandbox"
	"github.com/codexec/codex/wire"
	"go.uber.org/zap"
)

// netDisabledVar tells a child that its network is restricted.
const netDisabledVar = "CODEX_SANDBOX_NETWORK_DISABLED"

// execPolicy is the sandbox a command/exec asked for, resolved (docs/protocol.md §12.3).
type execPolicy struct {
	none      bool            // runs with no sandbox at all
	netOff    bool            // with none: an external sandbox restricts the network
	profile   sandbox.Profile // otherwise
	policyCwd string          // anchors the profile
	roots     []string        // workspace roots; nil: the policy cwd
	allowed   []allowance     // what the operator's profile grants below deny paths
	// proxyPolicy is the compiled policy of profile.Proxy (a config.toml
	// profile with the network_proxy feature); nil without one.
	proxyPolicy *netproxy.Policy
}

// camelPolicyMembers are the members of a v2 SandboxPolicy; others,
// snake_case ones included, are ignored as 0.169.0 does.
var camelPolicyMembers = []string{"type", "writableRoots", "networkAccess", "excludeTmpdirEnvVar", "excludeSlashTmp", "access", "readOnlyAccess"}

// parseExecPolicy parses sandboxPolicy at decoding time: its errors are
// "Invalid request: …".
func parseExecPolicy(raw map[string]any) (sandbox.Policy, *rpc.Error) {
	if raw["type"] == "dangerFullAccess" {
		// The other members do not apply to it: what sandbox.ParsePolicy
		// would return, without a marshal and a parse per request.
		return sandbox.Policy{Mode: sandbox.PolicyDangerFullAccess}, nil
	}
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

// resolveExecPolicy is check 7 of docs/protocol.md §12.2: the sandbox policy (anchored at
// the server cwd), the named profile (anchored at the request cwd), or the
// configured default permissions (at the server cwd). Every choice keeps
// the configured deny-read entries and glob scan depth, pinned so that the
// request's cwd or $TMPDIR cannot move them. What the user profile in use
// and the configured default grant below deny paths is recorded for
// sandboxSpec's check that nothing else (a request's cwd, writable root
// or $TMPDIR) re-opens a denied folder.
func resolveExecPolicy(p *wire.CommandExecParams, pol *sandbox.Policy, perms *config.Permissions, cwd, serverCwd string) (execPolicy, *rpc.Error) {
	var ep execPolicy
	switch {
	case pol != nil:
		ep.policyCwd = serverCwd
		switch pol.Mode {
		case sandbox.PolicyDangerFullAccess:
			ep.none = true
		case sandbox.PolicyExternalSandbox:
			ep.none, ep.netOff = true, !pol.NetworkAccess
		default:
			ep.profile = pol.Profile()
		}
	default:
		name, policyCwd := perms.DefaultName(), serverCwd
		if p.PermissionProfile != nil {
			name, policyCwd = *p.PermissionProfile, cwd
		}
		r, err := perms.Resolve(name, policyCwd)
		if err != nil {
			return execPolicy{}, rpc.Errorf(rpc.CodeInvalidRequest, "invalid permission profile: %v", err)
		}
		ep = execPolicy{none: r.Disabled, profile: r.Profile, policyCwd: policyCwd, roots: r.WorkspaceRoots}
		if !strings.HasPrefix(name, ":") {
			ep.allowed = operatorAllowances(r.Profile.Entries, r.WorkspaceRoots)
		}
	}
	ep, err := keepProtections(ep, perms, serverCwd)
	if err != nil {
		return execPolicy{}, rpc.Errorf(rpc.CodeInvalidRequest, "invalid permission profile: %v", err)
	}
	ep.allowed = append(ep.allowed, defaultAllowances(perms, serverCwd)...)
	if !ep.none && ep.profile.Proxied() {
		pol, err := netproxy.Compile(*ep.profile.Proxy)
		if err != nil {
			return execPolicy{}, proxySettingsError(err)
		}
		ep.proxyPolicy = pol
	}
	return ep, nil
}

// proxySettingsError is the answer of command/exec to a profile whose
// proxy settings do not compile, in the reference's two classes: a
// constraint it rejects (-32600) or a proxy it fails to build (-32603).
func proxySettingsError(err error) *rpc.Error {
	var se *netproxy.SettingsError
	if !errors.As(err, &se) {
		return rpc.Errorf(rpc.CodeInternalError, "failed to start managed network proxy: %v", err)
	}
	if se.Invalid {
		return rpc.Errorf(rpc.CodeInvalidRequest, "invalid permission profile: network proxy constraints are invalid: %s", se.Text)
	}
	return rpc.Errorf(rpc.CodeInternalError, "failed to start managed network proxy: failed to build network proxy state: %s", se.Text)
}

// keepProtections adds the configured deny-read entries to the profile,
// compiled for the request's policy cwd and for the server cwd (the
// workspace they were configured for), so that a request anchored
// elsewhere cannot read the server workspace's denied files either. A
// request that asked for no sandbox gets one that only masks them: full
// write, full network, the denied paths hidden. The glob scan depth is the
// configured one, or the deeper of it and the profile's when the profile
// has deny globs of its own (nil is unlimited): a profile's shallow scan
// must not let the configured globs miss deeper files.
func keepProtections(ep execPolicy, perms *config.Permissions, serverCwd string) (execPolicy, error) {
	deny, depth, err := perms.Protections(ep.policyCwd)
	if err != nil {
		return execPolicy{}, err
	}
	if ep.policyCwd != serverCwd {
		more, _, err := perms.Protections(serverCwd)
		if err != nil {
			return execPolicy{}, err
		}
		deny = append(deny, more...)
	}
	if len(deny) == 0 {
		return ep, nil
	}
	if ep.none {
		ep.none = false
		ep.profile = sandbox.Managed(sandbox.NetworkEnabled, sandbox.SpecialEntry(sandbox.SpecialRoot, sandbox.AccessWrite))
	}
	prof := ep.profile
	prof.Entries = append(slices.Clip(prof.Entries), deny...)
	if slices.ContainsFunc(prof.Entries[:len(ep.profile.Entries)], isDenyGlob) {
		prof.GlobScanMaxDepth = deeper(prof.GlobScanMaxDepth, depth)
	} else {
		prof.GlobScanMaxDepth = depth
	}
	ep.profile = prof
	return ep, nil
}

// deeper returns the larger glob scan depth, nil (unlimited) winning.
func deeper(a, b *int) *int {
	if a == nil || b == nil {
		return nil
	}
	d := max(*a, *b)
	return &d
}

func isDenyGlob(e sandbox.Entry) bool {
	return e.Path.Type == sandbox.PathGlob && e.Access == sandbox.AccessDeny
}

// sandboxSpec prepares the plan of ep for spec, with the network variable
// in spec's env; nil for no sandbox. The plan's launcher goes into spec
// (it reads the plan when the command starts, after guardPlan).
func sandboxSpec(ep execPolicy, spec *proc.Spec, inheritPID bool, log *zap.Logger) (*sandbox.Plan, error) {
	if ep.netOff {
		spec.Env = append(slices.DeleteFunc(spec.Env, func(kv string) bool { return strings.HasPrefix(kv, netDisabledVar+"=") }), netDisabledVar+"=1")
	}
	if ep.none {
		return nil, nil
	}
	plan, env, err := planFor(&sandbox.Sandbox{Permissions: ep.profile, Cwd: ep.policyCwd, WorkspaceRoots: ep.roots}, spec.Dir, spec.Env, true, inheritPID)
	if err != nil {
		return nil, err
	}
	if plan != nil {
		if err := reopensDenied(plan, ep.allowed); err != nil {
			return nil, err
		}
	}
	spec.Launcher, spec.Env = launcher(plan, log), env
	return plan, nil
}
