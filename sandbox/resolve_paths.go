package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// within reports whether path equals root or lies below it, comparing
// whole components (both clean and absolute).
func within(path, root string) bool {
	return root == "/" || path == root || strings.HasPrefix(path, root+"/")
}

// withinAny reports whether path lies within one of roots.
func withinAny(path string, roots []string) bool {
	return slices.ContainsFunc(roots, func(r string) bool { return within(path, r) })
}

// depth counts a clean absolute path's components ("/" is 0).
func depth(path string) int {
	if path == "/" {
		return 0
	}
	return strings.Count(path, "/")
}

// dedup removes repeated strings, keeping the first occurrence.
func dedup(ss []string) []string {
	var out []string
	seen := make(map[string]bool, len(ss))
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// sortByDepth sorts paths shallowest first, then lexically.
func sortByDepth(paths []string) {
	slices.SortFunc(paths, func(a, b string) int {
		if d := depth(a) - depth(b); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
}

// lexists reports whether something (a dangling symlink included) exists
// at path.
func lexists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// splitExisting returns the deepest ancestor of path (path included) that
// exists, and the remaining suffix ("" or "/a/b").
func splitExisting(path string) (string, string) {
	for a := path; ; a = filepath.Dir(a) {
		if lexists(a) || a == "/" {
			return a, strings.TrimPrefix(path, a)
		}
	}
}

// canonical resolves every symlink of path's deepest resolvable ancestor
// and appends the rest: the location a bind mount of path would reach.
func canonical(path string) string {
	for a := path; ; a = filepath.Dir(a) {
		if c, err := filepath.EvalSymlinks(a); err == nil {
			return joinSuffix(c, strings.TrimPrefix(path, a))
		}
		if a == "/" {
			return path
		}
	}
}

// normalizeKeepLink canonicalises path like canonical, except that when
// its deepest existing ancestor is itself a symlink, that symlink is kept
// (its parent is canonicalised): the symlink inode can then be checked and
// masked instead of only its target.
func normalizeKeepLink(path string) string {
	a, suffix := splitExisting(path)
	if fi, err := os.Lstat(a); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return joinSuffix(canonical(filepath.Dir(a)), "/"+filepath.Base(a)+suffix)
	}
	return joinSuffix(canonical(a), suffix)
}

// joinSuffix appends a "/x/y" suffix to a clean absolute path.
func joinSuffix(base, suffix string) string {
	if suffix == "" {
		return base
	}
	return filepath.Clean(base + suffix)
}

// firstWritableSymlink walks path's components and returns the first one
// that is a symlink lying within one of the writable paths, or "".
func firstWritableSymlink(path string, writable []string) string {
	return firstSymlinkWhere(path, func(link string) bool { return withinAny(link, writable) })
}

// firstSymlinkWhere walks path's components (stopping at the first that
// does not exist) and returns the first symlink for which match holds, or
// "".
func firstSymlinkWhere(path string, match func(link string) bool) string {
	cur := ""
	for _, part := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		if part == "" {
			continue
		}
		cur += "/" + part
		fi, err := os.Lstat(cur)
		if err != nil {
			return ""
		}
		if fi.Mode()&os.ModeSymlink != 0 && match(cur) {
			return cur
		}
	}
	return ""
}

// firstMissing returns the first component of path that does not exist,
// or "" when path exists.
func firstMissing(path string) string {
	cur := ""
	for _, part := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		if part == "" {
			continue
		}
		cur += "/" + part
		if !lexists(cur) {
			return cur
		}
	}
	return ""
}

// platformDefaults returns the existing members of the Linux default read
// set (the `minimal` special path), in their logical form: /lib may be a
// symlink the command's dynamic loader needs.
func platformDefaults() []string {
	var out []string
	for _, p := range []string{"/bin", "/sbin", "/usr", "/etc", "/lib", "/lib64", "/nix/store", "/run/current-system/sw"} {
		if lexists(p) {
			out = append(out, p)
		}
	}
	return out
}

// devFiles are the device nodes that stay read-write under Landlock
// (docs/sandbox.md §4.5; random and urandom as bubblewrap's --dev makes them).
func devFiles() []string {
	return []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx", "/dev/pts"}
}
