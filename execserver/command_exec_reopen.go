package execserver

import (
	"path/filepath"
	"strings"

	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/sandbox"
)

// reopensDenied refuses a plan in which a path the request chose (chosen,
// relative ones taken from dir) lies strictly inside a denied folder and
// holds a writable or readable root: the sandbox re-attaches such a root
// inside the folder's mask, so a request could read a denied folder's
// contents by naming a subfolder as its cwd, a writable root or $TMPDIR.
// A root the operator wrote below a denied folder of the workspace is not
// at issue: it lies inside a request path, not the other way round.
func reopensDenied(plan *sandbox.Plan, chosen []string, dir string) *rpc.Error {
	roots := make([]string, 0, len(plan.WritableRoots)+len(plan.ReadableRoots))
	for _, w := range plan.WritableRoots {
		roots = append(roots, w.Path)
	}
	roots = append(roots, plan.ReadableRoots...)
	for _, c := range chosen {
		if !filepath.IsAbs(c) {
			c = filepath.Join(dir, c)
		}
		forms := []string{filepath.Clean(c)}
		if real, err := filepath.EvalSymlinks(c); err == nil && real != forms[0] {
			forms = append(forms, real)
		}
		for _, f := range forms {
			d := deniedAbove(f, plan.DenyPaths)
			if d == "" {
				continue
			}
			for _, r := range roots {
				if below(r, f) || below(f, r) && below(r, d) && r != d {
					return rpc.Errorf(rpc.CodeInvalidRequest, "command/exec: %s lies inside the denied path %s, which a request cannot open", c, d)
				}
			}
		}
	}
	return nil
}

// deniedAbove returns the deny path that strictly contains path, or "".
func deniedAbove(path string, deny []string) string {
	for _, d := range deny {
		if path != d && below(path, d) {
			return d
		}
	}
	return ""
}

// below reports whether path equals dir or lies below it (clean absolute
// paths, whole components).
func below(path, dir string) bool {
	return dir == "/" || path == dir || strings.HasPrefix(path, dir+"/")
}
