package sandbox

import (
	"path/filepath"

	"github.com/codexec/codex/netproxy"
)

// ProfileType is the `type` tag of a PermissionProfile (docs/sandbox.md §2.1).
type ProfileType string

// Profile types. The zero value means managed.
const (
	ProfileManaged  ProfileType = "managed"
	ProfileDisabled ProfileType = "disabled"
	ProfileExternal ProfileType = "external"
)

// FileSystemKind is the `type` of a managed profile's `file_system`. The
// zero value means restricted.
type FileSystemKind string

// File system kinds of a managed profile.
const (
	FileSystemRestricted   FileSystemKind = "restricted"
	FileSystemUnrestricted FileSystemKind = "unrestricted"
)

// Network is the network policy: "restricted" (the zero value) or "enabled".
type Network string

// Network policies.
const (
	NetworkRestricted Network = "restricted"
	NetworkEnabled    Network = "enabled"
)

// Access is what an entry grants. Ties at equal depth resolve deny > write >
// read (docs/sandbox.md §3.2).
type Access string

// Access modes. On input "none" is accepted as an alias of "deny".
const (
	AccessRead  Access = "read"
	AccessWrite Access = "write"
	AccessDeny  Access = "deny"
)

// rank orders access modes for tie-breaking: deny > write > read.
func (a Access) rank() int {
	switch a {
	case AccessRead:
		return 1
	case AccessWrite:
		return 2
	default:
		return 3
	}
}

// CanRead reports whether the access allows reading.
func (a Access) CanRead() bool { return a == AccessRead || a == AccessWrite }

// CanWrite reports whether the access allows writing.
func (a Access) CanWrite() bool { return a == AccessWrite }

// PathType is the `type` tag of an entry's path.
type PathType string

// Entry path forms.
const (
	PathAbsolute PathType = "path"
	PathGlob     PathType = "glob_pattern"
	PathSpecial  PathType = "special"
)

// SpecialKind is the `kind` of a special path. Kinds this server does not
// know are kept verbatim and ignored, like SpecialUnknown.
type SpecialKind string

// Special path kinds (docs/sandbox.md §2.1). current_working_directory is
// parsed as SpecialProjectRoots.
const (
	SpecialRoot         SpecialKind = "root"
	SpecialMinimal      SpecialKind = "minimal"
	SpecialProjectRoots SpecialKind = "project_roots"
	SpecialTmpdir       SpecialKind = "tmpdir"
	SpecialSlashTmp     SpecialKind = "slash_tmp"
	SpecialUnknown      SpecialKind = "unknown"
)

// known reports whether the kind has a meaning here.
func (k SpecialKind) known() bool {
	switch k {
	case SpecialRoot, SpecialMinimal, SpecialProjectRoots, SpecialTmpdir, SpecialSlashTmp:
		return true
	}
	return false
}

// MissingSkip is the missing_path_behavior of automatic entries: when the
// path is missing, nothing is created or watched for it.
const MissingSkip = "skip"

// EntryPath is an entry's path: an absolute path, a glob pattern or a
// special path, according to Type.
type EntryPath struct {
	Type PathType
	// Path is the absolute native path (PathAbsolute).
	Path string
	// Pattern is the git-style glob (PathGlob).
	Pattern string
	// Kind and Subpath describe a special path (PathSpecial). Token is the
	// `path` member of an unknown special path, kept for round trips.
	Kind    SpecialKind
	Subpath string
	Token   string
}

// Entry is one file-system permission entry of a restricted profile.
type Entry struct {
	Path   EntryPath
	Access Access
	// MissingPathBehavior is "skip" for automatic entries; other values
	// are kept verbatim and mean the default behaviour.
	MissingPathBehavior string
}

// skip reports whether a missing path of this entry is to be ignored.
func (e Entry) skip() bool { return e.MissingPathBehavior == MissingSkip }

// Profile is a PermissionProfile (docs/sandbox.md §2.1), the canonical policy
// form. The zero value is the default profile: managed, restricted, no
// entries, network restricted, which denies everything. A Profile is an
// immutable value; constructors and parsers return fresh slices.
type Profile struct {
	Type ProfileType
	// FileSystem is the managed profile's file-system kind.
	FileSystem FileSystemKind
	// Entries of a restricted file system, in wire order.
	Entries []Entry
	// GlobScanMaxDepth caps deny-glob expansion; nil is unlimited and 0
	// disables expansion.
	GlobScanMaxDepth *int
	// Network is informational for external profiles and "enabled" for
	// disabled ones.
	Network Network
	// Proxy, when not nil, narrows an enabled network to the managed
	// proxy (docs/sandbox.md §4.9): the command is "proxied", in a network
	// namespace of its own whose only way out is the proxy the server
	// runs with these settings, whatever the profile's type (an external,
	// disabled or full-access profile with a proxy is sandboxed for it).
	// A profile whose network is off ignores it: nothing gets out. The
	// wire's sandbox object never carries it: the server sets it from
	// config.toml or process/start's networkProxy.
	Proxy *netproxy.Settings `json:"-"`
}

// Proxied reports whether the command's network goes through the managed
// proxy: the network is on and Proxy is set.
func (p Profile) Proxied() bool { return p.Proxy != nil && p.FullNetwork() }

// fsMode is the effective file-system policy of a profile.
type fsMode int

const (
	fsRestricted fsMode = iota
	fsUnrestricted
	fsExternal
)

// mode returns the effective file-system policy.
func (p Profile) mode() fsMode {
	switch p.Type {
	case ProfileDisabled:
		return fsUnrestricted
	case ProfileExternal:
		return fsExternal
	}
	if p.FileSystem == FileSystemUnrestricted {
		return fsUnrestricted
	}
	return fsRestricted
}

// Restricted reports whether the profile has a restricted file-system
// policy (a managed profile with entries, possibly none).
func (p Profile) Restricted() bool { return p.mode() == fsRestricted }

// External reports whether the caller is already sandboxed: nothing is
// enforced, whatever the network says.
func (p Profile) External() bool { return p.mode() == fsExternal }

// FullNetwork reports whether the network is enabled. A disabled profile
// always has full network.
func (p Profile) FullNetwork() bool {
	return p.Type == ProfileDisabled || p.Network == NetworkEnabled
}

// FullDiskRead reports the full-disk read predicate of docs/sandbox.md §3.3:
// root readable and no deny entry at all.
func (p Profile) FullDiskRead() bool {
	if !p.Restricted() {
		return true
	}
	root, deny := false, false
	for _, e := range p.Entries {
		if e.Access == AccessDeny {
			deny = true
		}
		if isSpecial(e.Path, SpecialRoot) && e.Access.CanRead() {
			root = true
		}
	}
	return root && !deny
}

// FullDiskWrite reports the full-disk write predicate of docs/sandbox.md §3.3:
// root writable and no entry that narrows it.
func (p Profile) FullDiskWrite() bool {
	if !p.Restricted() {
		return true
	}
	root := false
	for _, e := range p.Entries {
		if isSpecial(e.Path, SpecialRoot) && e.Access == AccessWrite {
			root = true
		}
	}
	return root && !p.narrowsWrite()
}

// narrowsWrite reports whether some entry really reduces a root write
// grant: any glob deny, and any read or deny entry that no equally specific
// write entry shadows. minimal and unknown special paths never narrow.
func (p Profile) narrowsWrite() bool {
	for _, e := range p.Entries {
		if e.Access == AccessWrite {
			continue
		}
		switch e.Path.Type {
		case PathGlob:
			return true
		case PathSpecial:
			switch {
			case e.Path.Kind == SpecialRoot:
				if e.Access == AccessDeny {
					return true
				}
			case e.Path.Kind == SpecialMinimal || !e.Path.Kind.known():
			default:
				if !p.shadowedByWrite(e) {
					return true
				}
			}
		case PathAbsolute:
			if !p.shadowedByWrite(e) {
				return true
			}
		}
	}
	return false
}

// shadowedByWrite reports whether a write entry targets the same location
// as e and outranks it (write beats read; nothing beats deny).
func (p Profile) shadowedByWrite(e Entry) bool {
	for _, c := range p.Entries {
		if c.Access == AccessWrite && c.Access.rank() > e.Access.rank() && sameTarget(c.Path, e.Path) {
			return true
		}
	}
	return false
}

// sameTarget reports whether two entry paths name the same location
// without needing a context (only cwd-independent specials fold).
func sameTarget(a, b EntryPath) bool {
	switch {
	case a.Type == PathAbsolute && b.Type == PathAbsolute:
		return a.Path == b.Path
	case a.Type == PathSpecial && b.Type == PathSpecial:
		if a.Kind != b.Kind {
			return false
		}
		switch a.Kind {
		case SpecialProjectRoots:
			return filepath.Clean("/"+a.Subpath) == filepath.Clean("/"+b.Subpath)
		case SpecialRoot, SpecialMinimal, SpecialTmpdir, SpecialSlashTmp:
			return true
		}
		return a.Token == b.Token && a.Subpath == b.Subpath
	case a.Type == PathGlob && b.Type == PathGlob:
		return a.Pattern == b.Pattern
	case a.Type == PathSpecial && b.Type == PathAbsolute:
		return specialIsPath(a, b.Path)
	case a.Type == PathAbsolute && b.Type == PathSpecial:
		return specialIsPath(b, a.Path)
	}
	return false
}

// specialIsPath folds the specials whose target needs no context.
func specialIsPath(s EntryPath, path string) bool {
	switch s.Kind {
	case SpecialRoot:
		return path == "/"
	case SpecialSlashTmp:
		return path == "/tmp"
	}
	return false
}

// IncludePlatformDefaults reports whether the platform's default read set
// is added: not full-read, restricted, and a readable minimal entry.
func (p Profile) IncludePlatformDefaults() bool {
	if !p.Restricted() || p.FullDiskRead() {
		return false
	}
	for _, e := range p.Entries {
		if isSpecial(e.Path, SpecialMinimal) && e.Access.CanRead() {
			return true
		}
	}
	return false
}

// isSpecial reports whether path is the special path of the given kind.
func isSpecial(path EntryPath, kind SpecialKind) bool {
	return path.Type == PathSpecial && path.Kind == kind
}

// FSNeedsSandbox reports whether an fs operation under p must run in the
// sandboxed fs helper: the policy is restricted and does not grant
// full-disk write (docs/protocol.md §8.2). Otherwise it runs directly.
func FSNeedsSandbox(p Profile) bool { return p.Restricted() && !p.FullDiskWrite() }

// ProcessNeedsHelper reports whether a process under p is sandboxed, so
// runs under the sandbox helper (docs/sandbox.md §3.7): every profile but
// an external one and one that restricts neither files nor network
// (disabled, danger-full-access). A restricted file system that grants
// write on the whole disk is still a sandbox, and so is every proxied
// profile.
func ProcessNeedsHelper(p Profile) bool {
	if p.Proxied() {
		return true
	}
	if p.External() {
		return false
	}
	return !p.FullNetwork() || p.Restricted()
}
