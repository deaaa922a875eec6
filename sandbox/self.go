package sandbox

import (
	"os"
	"path/filepath"
	"slices"
)

// SelfExe is how every re-exec of our own binary names it: the kernel's
// link to the running image. An exec of it resolves in the forked child
// (whose image is ours) to the file we were started from, even after that
// path was renamed over or deleted; an exec by path would run whatever
// now lies there, and a sandboxed command may write there.
const SelfExe = "/proc/self/exe"

// selfPath is our executable's path, captured once at start-up.
var selfPath, _ = os.Executable()

// SelfPath returns the path our executable was started from, captured at
// start-up ("" if unknown). It names the file for policy rules (its
// directory stays readable; the file itself is kept read-only); never exec
// it, use SelfExe.
func SelfPath() string { return selfPath }

// ChildOptions composes the sandbox helper (ChildMain) with the parts of
// the binary it runs in-process. main builds it at its dispatch, so no
// package is wired by mutating another's globals. The zero value is a
// helper that runs commands only.
type ChildOptions struct {
	// FSHelper is the fs helper operation that the helper runs
	// in-process, after enforcement, for a plan with FSHelper set
	// (docs/sandbox.md §4.7): main passes fshelper.ChildMain. It returns the
	// exit status. If nil, such a plan fails with status 1 before anything
	// is enforced.
	FSHelper func() int
}

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
