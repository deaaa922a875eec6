package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

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

// globContext is what the expansion needs from the resolver: the anchors
// a folder masked whole must not hold (maskSet), and the folders where
// the command, or another, may have planted a symlink.
type globContext struct {
	anchors   []string
	plantable []string
}

// expandDenyGlobs expands the profile's deny globs into the paths to mask
// where they are (Plan.DenyMatches, docs/sandbox.md §3.5). Each absolute
// pattern is split at its first `*?[]`; the static prefix's directory,
// its symlinks resolved, is the search root (a root of "/" is skipped as
// too broad). The walk includes dotfiles, does not follow symlinked
// directories, and matches non-directories, symlinks included (masked
// themselves). A search root reached through a plantable symlink is not
// walked: the symlink is masked. maxDepth nil is unlimited and 0
// disables expansion. Beyond maxGlobMatches mounts, folders are masked
// whole (maskSet.fold).
func expandDenyGlobs(p Profile, ctx Context, gc globContext) ([]string, error) {
	if p.GlobScanMaxDepth != nil && *p.GlobScanMaxDepth == 0 {
		return nil, nil
	}
	set := newMaskSet(gc.anchors)
	var scans []*globScan
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
			if scans, err = addScan(scans, set, alt, gc.plantable); err != nil {
				return nil, err
			}
		}
	}
	w := &globWalk{set: set, maxDepth: p.GlobScanMaxDepth}
	for _, s := range scans {
		set.scans = append(set.scans, s.root)
	}
	for _, s := range scans {
		if !set.covered(s.root) {
			if err := w.walk(s); err != nil {
				return nil, err
			}
		}
	}
	return set.result()
}

// addScan adds the pattern alt to the scans: a literal path is added to
// the set when it exists, a pattern to the scan of its search root. A
// search root reached through a plantable symlink is not walked: that
// symlink is masked itself.
func addScan(scans []*globScan, set *maskSet, alt string, plantable []string) ([]*globScan, error) {
	i := firstMeta(alt)
	if i < 0 { // a literal path: deny it if it exists
		lit := unescape(alt)
		dir, link := resolveTrusted(filepath.Dir(lit), plantable)
		switch {
		case link != "":
			set.add(filepath.Dir(link), filepath.Base(link))
		case dir != "":
			if lexists(filepath.Join(dir, filepath.Base(lit))) {
				set.add(dir, filepath.Base(lit))
			}
		}
		return scans, nil
	}
	end := strings.LastIndex(alt[:i], "/")
	if end <= 0 {
		return scans, nil // rooted at "/": too broad
	}
	m, err := compileGlob(alt[end+1:])
	if err != nil {
		return nil, &PrepareError{Err: err}
	}
	root, link := resolveTrusted(unescape(alt[:end]), plantable)
	if link != "" {
		set.add(filepath.Dir(link), filepath.Base(link))
		return scans, nil
	}
	if root == "" || root == "/" {
		return scans, nil // missing, or too broad
	}
	k := slices.IndexFunc(scans, func(s *globScan) bool { return s.root == root })
	if k < 0 {
		scans = append(scans, &globScan{root: root})
		k = len(scans) - 1
	}
	scans[k].globs = append(scans[k].globs, m)
	return scans, nil
}

// resolveTrusted resolves the symlinks of the absolute path one component
// at a time. It stops at the first symlink that lies strictly below one of
// the plantable folders and returns it as link (its folder resolved), or
// returns the resolved path; "" when path does not exist or loops.
func resolveTrusted(path string, plantable []string) (resolved, link string) {
	todo := strings.Split(strings.TrimPrefix(filepath.Clean(path), "/"), "/")
	cur, hops := "/", 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := os.Lstat(next)
		if err != nil {
			return "", ""
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		if slices.ContainsFunc(plantable, func(p string) bool { return next != p && within(next, p) }) {
			return "", next
		}
		target, err := os.Readlink(next)
		if hops++; err != nil || hops > 40 {
			return "", ""
		}
		if strings.HasPrefix(target, "/") {
			cur = "/"
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	return cur, ""
}
