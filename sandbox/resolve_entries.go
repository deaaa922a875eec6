package sandbox

import (
	"os"
	"path/filepath"
)

// resolvedEntry is an entry resolved to one absolute path (
// docs/sandbox.md §3.2 step 1). A project_roots entry yields one per workspace root.
type resolvedEntry struct {
	path   string
	access Access
	skip   bool
}

// resolveEntries resolves every entry with a path prefix. Globs, minimal
// and unknown special paths resolve to nothing.
func resolveEntries(p Profile, ctx Context) []resolvedEntry {
	var out []resolvedEntry
	add := func(e Entry, path string) {
		if filepath.IsAbs(path) { // a relative workspace root resolves to nothing
			out = append(out, resolvedEntry{path: filepath.Clean(path), access: e.Access, skip: e.skip()})
		}
	}
	for _, e := range p.Entries {
		switch e.Path.Type {
		case PathAbsolute:
			add(e, e.Path.Path)
		case PathSpecial:
			switch e.Path.Kind {
			case SpecialRoot:
				add(e, "/")
			case SpecialProjectRoots:
				for _, root := range ctx.projectRoots() {
					add(e, joinSubpath(root, e.Path.Subpath))
				}
			case SpecialTmpdir:
				if filepath.IsAbs(ctx.TmpDir) {
					add(e, ctx.TmpDir)
				}
			case SpecialSlashTmp:
				if fi, err := os.Stat("/tmp"); err == nil && fi.IsDir() {
					add(e, "/tmp")
				}
			}
		}
	}
	return out
}

// accessOf applies the exact rule of docs/sandbox.md §3.2 to a clean absolute
// path: the deepest matching entry wins, ties go deny > write > read, and
// no match means deny.
func accessOf(entries []resolvedEntry, path string) Access {
	best, bestDepth, found := AccessDeny, -1, false
	for _, e := range entries {
		if !within(path, e.path) {
			continue
		}
		d := depth(e.path)
		if !found || d > bestDepth || (d == bestDepth && e.access.rank() > best.rank()) {
			best, bestDepth, found = e.access, d, true
		}
	}
	return best
}

// Access returns what the profile grants on path (docs/sandbox.md §3.2),
// without the derived protections of docs/sandbox.md §3.4 (metadata, defaults) and
// without globs: unrestricted and external profiles grant write; a
// restricted one gives the deepest matching entry's access, ties resolving
// deny > write > read, and deny when nothing matches. A relative path is
// taken relative to the policy cwd.
func (p Profile) Access(path string, ctx Context) Access {
	if !p.Restricted() {
		return AccessWrite
	}
	if !filepath.IsAbs(path) {
		if ctx.Cwd == "" {
			return AccessDeny
		}
		path = filepath.Join(ctx.Cwd, path)
	}
	return accessOf(resolveEntries(p, ctx), filepath.Clean(path))
}
