package shelltool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/sandbox"
	"github.com/codexec/codex/wire"
)

// MetaSandboxState is the key of the per-call sandbox state in a
// tools/call's params._meta (Codex 0.169.0, docs/shell-tool.md §3.5).
const MetaSandboxState = "codex/sandbox-state"

// sandboxState is the sandbox a call runs under: a permission profile and
// its policy cwd ("" means the call's workdir). The zero value is not
// valid; defaultState is the state before any update.
type sandboxState struct {
	profile sandbox.Profile
	cwd     string
}

// defaultState is read-only with the call's workdir as the policy cwd
// (docs/shell-tool.md §3.5).
func defaultState() sandboxState { return sandboxState{profile: sandbox.ReadOnly(false)} }

// updateParams are the params of codex/sandbox-state/update. Only the
// types of codexLinuxSandboxExe and useLinuxSandboxBwrap are checked: we
// always use our own helper.
type updateParams struct {
	SandboxPolicy        json.RawMessage `json:"sandboxPolicy"`
	SandboxCwd           *string         `json:"sandboxCwd"`
	CodexLinuxSandboxExe *string         `json:"codexLinuxSandboxExe"`
	UseLinuxSandboxBwrap *bool           `json:"useLinuxSandboxBwrap"`
}

// parseUpdate parses the params of codex/sandbox-state/update: the legacy
// sandboxPolicy (core kebab-case, and the v2 camelCase spelling as our
// extension) and the required sandboxCwd. Errors are the wire errors of
// docs/shell-tool.md §3.5.
func parseUpdate(raw json.RawMessage) (sandboxState, error) {
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return sandboxState{}, rpc.Errorf(rpc.CodeInvalidParams, "missing params for sandbox state request")
	}
	fail := &rpc.Error{Code: rpc.CodeInvalidParams, Message: "failed to deserialize sandbox state", Data: append(json.RawMessage(nil), raw...)}
	var p updateParams
	if err := json.Unmarshal(raw, &p); err != nil || p.SandboxCwd == nil || len(p.SandboxPolicy) == 0 {
		return sandboxState{}, fail
	}
	pol, err := sandbox.ParsePolicy(p.SandboxPolicy)
	if err != nil {
		return sandboxState{}, fail
	}
	cwd, err := wire.ParsePath(*p.SandboxCwd)
	if err != nil {
		return sandboxState{}, fail
	}
	return sandboxState{profile: pol.Profile(), cwd: cwd.Native}, nil
}

// metaState is the per-call state of Codex 0.169.0.
type metaState struct {
	PermissionProfile    json.RawMessage `json:"permissionProfile"`
	SandboxPolicy        json.RawMessage `json:"sandboxPolicy"`
	SandboxCwd           *string         `json:"sandboxCwd"`
	CodexLinuxSandboxExe *string         `json:"codexLinuxSandboxExe"`
	UseLegacyLandlock    *bool           `json:"useLegacyLandlock"`
}

// parseMetaState reads params._meta["codex/sandbox-state"] of a
// tools/call. It returns nil when the call carries no state. The state
// holds a permissionProfile (managed, disabled, external) or, as our
// extension, a legacy sandboxPolicy, and a sandboxCwd (file:// URI or
// absolute path). A state that is present but unusable is an error: the
// call must not fall back to another sandbox.
func parseMetaState(meta json.RawMessage) (*sandboxState, error) {
	if len(meta) == 0 || bytes.Equal(bytes.TrimSpace(meta), []byte("null")) {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(meta, &m); err != nil {
		return nil, metaError(errors.New("_meta is not an object"))
	}
	raw, ok := m[MetaSandboxState]
	if !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, nil
	}
	var ms metaState
	if err := json.Unmarshal(raw, &ms); err != nil {
		return nil, metaError(err)
	}
	st := sandboxState{}
	var err error
	switch {
	case len(ms.PermissionProfile) > 0:
		st.profile, err = sandbox.ParseProfile(ms.PermissionProfile)
	case len(ms.SandboxPolicy) > 0:
		var pol sandbox.Policy
		pol, err = sandbox.ParsePolicy(ms.SandboxPolicy)
		st.profile = pol.Profile()
	default:
		err = errors.New("missing permissionProfile")
	}
	if err != nil {
		return nil, metaError(err)
	}
	if ms.SandboxCwd == nil {
		return nil, metaError(errors.New("missing sandboxCwd"))
	}
	cwd, err := wire.ParsePath(*ms.SandboxCwd)
	if err != nil {
		return nil, metaError(err)
	}
	st.cwd = cwd.Native
	return &st, nil
}

func metaError(err error) error {
	return rpc.Errorf(rpc.CodeInvalidParams, "failed to deserialize %s: %v", MetaSandboxState, err)
}

// plan prepares the state for a call in workdir whose command gets the
// environment env (its $TMPDIR is the tmpdir; sandbox.Prepare): the plan
// the sandbox helper enforces, nil for no sandbox (disabled, external, or
// nothing to restrict). Missing protected metadata names are watched by
// the helper, not shadowed by placeholder mounts (those need host-side
// directories, which the exec-server manages and this server does not).
func (s sandboxState) plan(workdir string, env []string) (*sandbox.Plan, error) {
	if s.profile.Type == sandbox.ProfileDisabled || s.profile.Type == sandbox.ProfileExternal {
		return nil, nil
	}
	cwd := s.cwd
	if cwd == "" {
		cwd = workdir
	}
	sb := &sandbox.Sandbox{Permissions: s.profile, Cwd: cwd}
	plan, err := sandbox.Prepare(sb, sandbox.Request{Cwd: workdir, Env: env, Purpose: sandbox.PurposeProcess})
	if err != nil {
		return nil, fmt.Errorf("sandbox error: %w", err)
	}
	return plan, nil
}
