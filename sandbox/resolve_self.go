package sandbox

import (
	"path/filepath"
	"slices"
)

// selfReadOnly returns our own executable as the plan's read-only files
// when the plan lets the command write it (it lies inside a writable root,
// or the whole base is writable), so that no sandboxed command can replace
// the file the server and every later helper run as root (docs/sandbox.md
// §7). The path is canonical, as the helper opens it without following
// symlinks; an unknown or missing executable gives nothing.
func selfReadOnly(plan *Plan, self string) []string {
	if !filepath.IsAbs(self) {
		return nil
	}
	c, err := filepath.EvalSymlinks(self)
	if err != nil || !plan.CanWrite(c) {
		return nil
	}
	return []string{c}
}

// isReadOnlyFile reports whether path is one of the plan's read-only files.
func (p *Plan) isReadOnlyFile(path string) bool {
	return slices.Contains(p.ReadOnlyFiles, path)
}
