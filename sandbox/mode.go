package sandbox

import "fmt"

// ModeOptions are the knobs of the legacy modes; the zero value is the
// plain mode: no extra writable roots, network restricted, /tmp and
// $TMPDIR writable under workspace-write.
type ModeOptions struct {
	WritableRoots       []string // extra writable roots (workspace-write only)
	Network             bool     // network enabled (read-only, workspace-write)
	ExcludeTmpdirEnvVar bool     // $TMPDIR not writable (workspace-write only)
	ExcludeSlashTmp     bool     // /tmp not writable (workspace-write only)
}

// ModeProfile is the one mapping of a sandbox mode name ("read-only",
// "workspace-write" or "danger-full-access", as the CLI flags and the
// legacy policy spell them) to its profile (docs/sandbox.md §3.6). Any other
// name is an error naming it.
func ModeProfile(mode string, o ModeOptions) (Profile, error) {
	switch PolicyMode(mode) {
	case PolicyReadOnly:
		return ReadOnly(o.Network), nil
	case PolicyWorkspaceWrite:
		return WorkspaceWrite(o.WritableRoots, o.Network, o.ExcludeTmpdirEnvVar, o.ExcludeSlashTmp), nil
	case PolicyDangerFullAccess:
		return DangerFullAccess(), nil
	}
	return Profile{}, fmt.Errorf("unknown sandbox mode %q; expected read-only, workspace-write or danger-full-access", mode)
}
