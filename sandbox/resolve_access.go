package sandbox

import (
	"path/filepath"
	"slices"
)

// CanWrite reports whether a plan lets the command write path, as the
// mount layer enforces it: not under a watched protected path, nor under a
// deny mask that no deeper writable root re-opens; inside the deepest
// writable root containing it and none of that root's read-only
// carve-outs, nor one of the read-only files; or anywhere when the root
// is not read-only. The path is taken literally (symlinks are not
// resolved). It is a model for tests and diagnostics, not an enforcement.
func (p *Plan) CanWrite(path string) bool {
	path = filepath.Clean(path)
	if withinAny(path, p.ProtectedCreate) || p.isReadOnlyFile(path) {
		return false
	}
	best := p.writableRootOf(path)
	if p.deniedBelow(path, best) {
		return false
	}
	if best == nil {
		return !p.ReadOnlyRoot && !p.RestrictedRead
	}
	return !withinAny(path, best.ReadOnly)
}

// writableRootOf returns the deepest writable root containing path.
func (p *Plan) writableRootOf(path string) *WritableRoot {
	var best *WritableRoot
	for i := range p.WritableRoots {
		w := &p.WritableRoots[i]
		if within(path, w.Path) && (best == nil || depth(w.Path) > depth(best.Path)) {
			best = w
		}
	}
	return best
}

// deniedBelow reports whether a deny mask covers path and is not re-opened
// by the writable root w lying below it.
func (p *Plan) deniedBelow(path string, w *WritableRoot) bool {
	for _, d := range p.DenyPaths {
		if within(path, d) && (w == nil || !within(w.Path, d) || w.Path == d) {
			return true
		}
	}
	return slices.ContainsFunc(p.DenyMatches, func(l string) bool { return within(path, l) })
}

// CanRead reports whether a plan lets the command read path: not under a
// deny mask (unless a deeper writable root re-opens it), and inside the
// readable or writable roots when reads are restricted. Like CanWrite it is
// a model, taken literally.
func (p *Plan) CanRead(path string) bool {
	path = filepath.Clean(path)
	if p.deniedBelow(path, p.writableRootOf(path)) {
		return false
	}
	if !p.RestrictedRead {
		return true
	}
	if withinAny(path, p.ReadableRoots) {
		return true
	}
	for _, w := range p.WritableRoots {
		if within(path, w.Path) {
			return true
		}
	}
	return false
}
