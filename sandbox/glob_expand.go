package sandbox

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// maxGlobMatches caps deny-glob expansion; more matches is fatal.
const maxGlobMatches = 8192

// anchorGlob makes a deny glob absolute (docs/sandbox.md §3.5): `~/…` at the
// home directory, relative patterns at the policy cwd. Without the anchor
// it fails closed.
func anchorGlob(pattern string, ctx Context) (string, error) {
	switch {
	case pattern == "~" || strings.HasPrefix(pattern, "~/"):
		if !filepath.IsAbs(ctx.HomeDir) {
			return "", preparef("cannot resolve deny-read glob %s: no home directory", pattern)
		}
		return filepath.Clean(ctx.HomeDir + "/" + strings.TrimPrefix(pattern, "~")), nil
	case strings.HasPrefix(pattern, "/"):
		return filepath.Clean(pattern), nil
	}
	if !filepath.IsAbs(ctx.Cwd) {
		return "", preparef("cannot resolve deny-read glob %s: no policy cwd", pattern)
	}
	return filepath.Clean(ctx.Cwd + "/" + pattern), nil
}

// globScan is one search root and the relative globs walked under it.
type globScan struct {
	root  string
	globs []*globMatcher
}

// expandDenyGlobs expands the profile's deny globs into the existing paths
// they match (docs/sandbox.md §3.5). Each absolute pattern is split at its first
// `*?[]`; the static prefix's directory is the search root (a root of "/"
// is skipped as too broad). The walk includes dotfiles, does not follow
// symlinked directories, and matches non-directories; a match that crosses
// a symlink adds its canonical target. maxDepth nil is unlimited and 0
// disables expansion. More than 8192 paths is fatal.
func expandDenyGlobs(p Profile, ctx Context) ([]string, error) {
	if p.GlobScanMaxDepth != nil && *p.GlobScanMaxDepth == 0 {
		return nil, nil
	}
	var scans []*globScan
	var found []string
	for _, e := range p.Entries {
		if e.Path.Type != PathGlob || e.Access != AccessDeny {
			continue
		}
		abs, err := anchorGlob(e.Path.Pattern, ctx)
		if err != nil {
			return nil, err
		}
		alts, err := expandBraces(abs)
		if err != nil {
			return nil, &PrepareError{Err: err}
		}
		for _, alt := range alts {
			i := firstMeta(alt)
			if i < 0 { // a literal path: deny it if it exists
				if lit := unescape(alt); lexists(lit) {
					found = append(found, lit)
				}
				continue
			}
			prefix := alt[:i]
			end := strings.LastIndex(prefix, "/")
			if end <= 0 {
				continue // rooted at "/": too broad
			}
			root := unescape(alt[:end])
			m, err := compileGlob(alt[end+1:])
			if err != nil {
				return nil, &PrepareError{Err: err}
			}
			k := slices.IndexFunc(scans, func(s *globScan) bool { return s.root == root })
			if k < 0 {
				scans = append(scans, &globScan{root: root})
				k = len(scans) - 1
			}
			scans[k].globs = append(scans[k].globs, m)
		}
	}
	seen := map[string]bool{}
	var out []string
	add := func(path, root string) error {
		for _, q := range []string{path, symlinkTarget(path)} {
			if q == "" || seen[q] {
				continue
			}
			seen[q] = true
			out = append(out, q)
			if len(out) > maxGlobMatches {
				return preparef("deny-read glob expansion for %s matched more than %d paths", root, maxGlobMatches)
			}
		}
		return nil
	}
	for _, path := range found {
		if err := add(path, path); err != nil {
			return nil, err
		}
	}
	for _, s := range scans {
		if err := s.walk(p.GlobScanMaxDepth, add); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// walk visits the search root and reports each matching non-directory.
func (s *globScan) walk(maxDepth *int, add func(path, root string) error) error {
	fi, err := os.Stat(s.root)
	if err != nil || !fi.IsDir() {
		return nil // nothing to match under a missing root
	}
	start := s.root
	if lfi, err := os.Lstat(s.root); err == nil && lfi.Mode()&os.ModeSymlink != 0 {
		start += "/" // the trailing slash makes WalkDir enter the linked root
	}
	return filepath.WalkDir(start, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return preparef("deny-read glob scan failed for %s: %v", s.root, err)
		}
		if path == start {
			return nil
		}
		rel := strings.TrimPrefix(path, s.root+"/")
		if d.IsDir() {
			if maxDepth != nil && strings.Count(rel, "/")+1 >= *maxDepth {
				return fs.SkipDir
			}
			return nil
		}
		for _, g := range s.globs {
			if g.match(rel) {
				return add(path, s.root)
			}
		}
		return nil
	})
}

// symlinkTarget returns the canonical target of path when one of its
// components is a symlink, or "".
func symlinkTarget(path string) string {
	t, err := filepath.EvalSymlinks(path)
	if err != nil || t == path {
		return ""
	}
	return t
}
