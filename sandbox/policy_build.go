package sandbox

import (
	"fmt"
	"path/filepath"
)

// PathEntry returns an entry for an absolute path.
func PathEntry(path string, access Access) Entry {
	return Entry{Path: EntryPath{Type: PathAbsolute, Path: filepath.Clean(path)}, Access: access}
}

// GlobDenyEntry returns a deny entry for a git-style glob pattern.
func GlobDenyEntry(pattern string) Entry {
	return Entry{Path: EntryPath{Type: PathGlob, Pattern: pattern}, Access: AccessDeny}
}

// SpecialEntry returns an entry for a special path without subpath.
func SpecialEntry(kind SpecialKind, access Access) Entry {
	return Entry{Path: EntryPath{Type: PathSpecial, Kind: kind}, Access: access}
}

// ProjectRootsEntry returns a project_roots entry with an optional subpath.
func ProjectRootsEntry(subpath string, access Access) Entry {
	return Entry{Path: EntryPath{Type: PathSpecial, Kind: SpecialProjectRoots, Subpath: subpath}, Access: access}
}

// metadataNames returns the protected workspace metadata names, in the
// order the reference lists them.
func metadataNames() [3]string { return [3]string{".git", ".agents", ".codex"} }

// Managed returns a managed restricted profile with the given entries.
func Managed(network Network, entries ...Entry) Profile {
	return Profile{
		Type:       ProfileManaged,
		FileSystem: FileSystemRestricted,
		Entries:    append([]Entry(nil), entries...),
		Network:    network,
	}
}

// DangerFullAccess is the legacy danger-full-access policy as a profile:
// unrestricted file system, network enabled (docs/sandbox.md §3.6).
func DangerFullAccess() Profile {
	return Profile{Type: ProfileManaged, FileSystem: FileSystemUnrestricted, Network: NetworkEnabled}
}

// ExternalSandbox is the legacy external-sandbox policy as a profile: the
// caller is already sandboxed and nothing is enforced.
func ExternalSandbox(network bool) Profile {
	return Profile{Type: ProfileExternal, Network: networkOf(network)}
}

// ReadOnly is the legacy read-only policy as a profile: root readable.
func ReadOnly(network bool) Profile {
	return Managed(networkOf(network), SpecialEntry(SpecialRoot, AccessRead))
}

// WorkspaceWrite is the legacy workspace-write policy as a profile
// (docs/sandbox.md §3.6): root readable; the project roots, /tmp (unless
// excludeSlashTmp), $TMPDIR (unless excludeTmpdirEnvVar) and each of
// writableRoots writable; the project roots' .git, .agents and .codex
// read-only with missing_path_behavior "skip". The project roots are the
// context's workspace roots (the policy cwd by default).
func WorkspaceWrite(writableRoots []string, network, excludeTmpdirEnvVar, excludeSlashTmp bool) Profile {
	entries := []Entry{
		SpecialEntry(SpecialRoot, AccessRead),
		ProjectRootsEntry("", AccessWrite),
	}
	if !excludeSlashTmp {
		entries = append(entries, SpecialEntry(SpecialSlashTmp, AccessWrite))
	}
	if !excludeTmpdirEnvVar {
		entries = append(entries, SpecialEntry(SpecialTmpdir, AccessWrite))
	}
	for _, r := range writableRoots {
		entries = append(entries, PathEntry(r, AccessWrite))
	}
	for _, name := range metadataNames() {
		e := ProjectRootsEntry(name, AccessRead)
		e.MissingPathBehavior = MissingSkip
		entries = append(entries, e)
	}
	return Managed(networkOf(network), entries...)
}

// networkOf maps a legacy network_access flag.
func networkOf(enabled bool) Network {
	if enabled {
		return NetworkEnabled
	}
	return NetworkRestricted
}

// NamedProfile maps the built-in profile names of docs/sandbox.md §2.5:
// ":read-only", ":workspace" and ":danger-no-sandbox". User profiles from
// the Codex config are out of scope and rejected.
func NamedProfile(name string) (Profile, error) {
	modes := map[string]PolicyMode{":read-only": PolicyReadOnly, ":workspace": PolicyWorkspaceWrite, ":danger-no-sandbox": PolicyDangerFullAccess}
	if mode, ok := modes[name]; ok {
		return ModeProfile(string(mode), ModeOptions{})
	}
	return Profile{}, invalidf("unknown permission profile `%s`", name)
}

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
