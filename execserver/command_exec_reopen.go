package execserver

import (
	"path/filepath"
	"strings"

	"github.com/codexec/codex/config"
	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/sandbox"
)

// allowance is a path an operator's profile grants: a writable or readable
// root at or below prefix may lie inside a denied folder that holds prefix
// strictly, when that folder lies strictly inside within (any folder when
// within is ""). A grant of "/" or of a folder above the denied one thus
// re-opens nothing; a read grant explains a readable root only.
type allowance struct {
	prefix, within string
	write          bool
}

// operatorAllowances lists what a user profile itself grants below its
// own or the kept deny paths: its absolute read and write paths, and its
// `:workspace_roots` subpaths under each workspace root. The paths are
// taken literally: a symlink swapped in later explains nothing.
func operatorAllowances(entries []sandbox.Entry, roots []string) []allowance {
	var out []allowance
	for _, e := range entries {
		switch {
		case e.Access == sandbox.AccessDeny:
		case e.Path.Type == sandbox.PathAbsolute:
			out = append(out, allowance{prefix: filepath.Clean(e.Path.Path), write: e.Access == sandbox.AccessWrite})
		case e.Path.Type == sandbox.PathSpecial && e.Path.Kind == sandbox.SpecialProjectRoots && e.Path.Subpath != "":
			for _, r := range roots {
				out = append(out, allowance{prefix: filepath.Join(r, e.Path.Subpath), within: filepath.Clean(r), write: e.Access == sandbox.AccessWrite})
			}
		}
	}
	if self := sandbox.SelfPath(); filepath.IsAbs(self) {
		out = append(out, allowance{prefix: filepath.Dir(filepath.Clean(self))}) // readable, for the helper
	}
	return out
}

// defaultAllowances are what the configured default profile, anchored at
// the server cwd, grants below deny paths: its own grants, and its
// workspace roots themselves when it grants them (the operator chose the
// server cwd and the configured roots; a workspace inside a denied folder
// is a deliberate layout). A request may re-open what the default does.
func defaultAllowances(perms *config.Permissions, serverCwd string) []allowance {
	name := perms.DefaultName()
	if strings.HasPrefix(name, ":") {
		return nil
	}
	r, err := perms.ResolveFilesystem(name, serverCwd) // its grants, whatever its network
	if err != nil {
		return nil
	}
	out := operatorAllowances(r.Profile.Entries, r.WorkspaceRoots)
	for _, e := range r.Profile.Entries {
		if e.Path.Type == sandbox.PathSpecial && e.Path.Kind == sandbox.SpecialProjectRoots && e.Path.Subpath == "" && e.Access != sandbox.AccessDeny {
			for _, root := range r.WorkspaceRoots {
				out = append(out, allowance{prefix: filepath.Clean(root), write: e.Access == sandbox.AccessWrite})
			}
		}
	}
	return out
}

// reopensDenied refuses a plan with a writable or readable root strictly
// inside one of its deny paths that neither the profile in use, when an
// operator wrote it, nor the configured default grants (operatorAllowances,
// defaultAllowances). The sandbox re-attaches such a root inside the
// folder's mask, so without this check a request could read a denied
// folder by naming a subfolder of it as its cwd, a writable root or its
// $TMPDIR. The check compares the plan's own paths, which the helper
// verifies by identity, so a symlink swapped after it cannot move a root.
func reopensDenied(plan *sandbox.Plan, allowed []allowance) *rpc.Error {
	check := func(r string, write bool) *rpc.Error {
		for _, d := range plan.DenyPaths {
			if strictlyBelow(r, d) && !granted(r, d, write, allowed) {
				return rpc.Errorf(rpc.CodeInvalidRequest, "command/exec: %s lies inside the denied path %s, which a request cannot open", r, d)
			}
		}
		return nil
	}
	for _, w := range plan.WritableRoots {
		if err := check(w.Path, true); err != nil {
			return err
		}
	}
	for _, r := range plan.ReadableRoots {
		if err := check(r, false); err != nil {
			return err
		}
	}
	return nil
}

// granted reports whether an allowance covers root r inside deny path d
// (a writable root when write).
func granted(r, d string, write bool, allowed []allowance) bool {
	for _, a := range allowed {
		if (a.write || !write) && below(r, a.prefix) && strictlyBelow(a.prefix, d) && (a.within == "" || strictlyBelow(d, a.within)) {
			return true
		}
	}
	return false
}

// strictlyBelow reports whether path lies below dir and is not dir.
func strictlyBelow(path, dir string) bool { return path != dir && below(path, dir) }

// below reports whether path equals dir or lies below it (clean absolute
// paths, whole components).
func below(path, dir string) bool {
	return dir == "/" || path == dir || strings.HasPrefix(path, dir+"/")
}
