package sandbox

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// resolver holds the intermediate state of one Resolve call.
type resolver struct {
	p       Profile
	ctx     Context
	entries []resolvedEntry
	// roots are the existing writable roots, canonical, in entry order.
	roots []*root
	// writable holds every root in both its logical and canonical form,
	// for the fail-closed symlink checks.
	writable []string
	// protect collects Plan.ProtectedCreate.
	protect []string
	// placeholders collects Plan.Placeholders.
	placeholders []string
}

// root is one writable root under construction.
type root struct {
	path     string   // canonical: where the bind mount lands
	raw      []string // the logical entry paths that resolved to it
	dir      bool     // a directory (a file root has no metadata)
	readOnly []string
}

// carve is a candidate read-only path inside a writable root.
type carve struct {
	path string
	skip bool // missing is fine: watch nothing
}

// collectRoots computes the writable roots (docs/sandbox.md §3.4): write
// entries that are actually writable, canonicalised, de-duplicated, and
// existing.
//
// It fails closed, before anything is canonicalised or remapped, when a
// root's logical path or the policy cwd crosses a symlink that lies strictly
// inside another writable root: the sandboxed command itself could have
// planted that symlink (a swap of the workspace for a link to anywhere), and
// binding its target would make that target writable. A root that is
// itself a symlink outside every other root (a symlinked home) is bound at
// its target as before.
func (r *resolver) collectRoots() error {
	var check, writable []string
	for _, e := range r.entries {
		if e.access == AccessWrite && accessOf(r.entries, e.path) == AccessWrite {
			check = append(check, e.path)
			writable = append(writable, e.path, canonical(e.path))
		}
	}
	if len(writable) > 0 && filepath.IsAbs(r.ctx.Cwd) {
		check = append(check, filepath.Clean(r.ctx.Cwd))
	}
	for _, p := range dedup(check) {
		if s := symlinkInsideOther(p, writable); s != "" {
			return &SymlinkCrossingError{Path: p, Symlink: s}
		}
	}

	byPath := map[string]*root{}
	for _, e := range r.entries {
		if e.access != AccessWrite || accessOf(r.entries, e.path) != AccessWrite {
			continue
		}
		c := canonical(e.path)
		fi, err := os.Stat(c)
		if err != nil {
			continue // nothing to bind
		}
		rt := byPath[c]
		if rt == nil {
			rt = &root{path: c, dir: fi.IsDir()}
			byPath[c] = rt
			r.roots = append(r.roots, rt)
		}
		rt.raw = dedup(append(rt.raw, e.path))
	}
	for _, rt := range r.roots {
		r.writable = append(r.writable, rt.raw...)
		r.writable = append(r.writable, rt.path)
	}
	r.writable = dedup(r.writable)
	return nil
}

// symlinkInsideOther walks path's components and returns the first one
// that is a symlink lying strictly below one of the writable paths, or "".
func symlinkInsideOther(path string, writable []string) string {
	return firstSymlinkWhere(path, func(link string) bool {
		for _, w := range writable {
			if link != w && within(link, w) {
				return true
			}
		}
		return false
	})
}

// canonicalRoots returns the roots' canonical paths.
func (r *resolver) canonicalRoots() []string {
	out := make([]string, 0, len(r.roots))
	for _, rt := range r.roots {
		out = append(out, rt.path)
	}
	return out
}

// remap moves a path given below a symlinked root's logical form to the
// root's canonical target (the deepest such root wins).
func (r *resolver) remap(path string) string {
	best, bestRaw := (*root)(nil), ""
	for _, rt := range r.roots {
		for _, raw := range rt.raw {
			if raw != rt.path && within(path, raw) && (best == nil || depth(raw) > depth(bestRaw)) {
				best, bestRaw = rt, raw
			}
		}
	}
	if best == nil {
		return path
	}
	return joinSuffix(best.path, strings.TrimPrefix(path, bestRaw))
}

// insideRoot reports whether path lies strictly below some writable root.
func (r *resolver) insideRoot(path string) bool {
	return r.owner(path) != nil
}

// owner returns the deepest root strictly above path, or nil.
func (r *resolver) owner(path string) *root {
	var best *root
	for _, rt := range r.roots {
		if path != rt.path && within(path, rt.path) && (best == nil || depth(rt.path) > depth(best.path)) {
			best = rt
		}
	}
	return best
}

// explicit reports whether some entry names exactly path.
func (r *resolver) explicit(path string) bool {
	for _, e := range r.entries {
		if e.path == path || r.remap(e.path) == path {
			return true
		}
	}
	return false
}

// metadataWritable reports whether a writable entry lies at or below the
// metadata path, which lifts its protection.
func (r *resolver) metadataWritable(meta string) bool {
	for _, e := range r.entries {
		if e.access == AccessWrite && accessOf(r.entries, e.path) == AccessWrite && within(r.remap(e.path), meta) {
			return true
		}
	}
	return false
}

// carveOuts computes every root's read-only subpaths and the protected
// metadata names, fails closed on writable symlinks, and records missing
// protected paths for the watcher.
func (r *resolver) carveOuts() error {
	var cands []carve
	cwdRoot := ""
	if filepath.IsAbs(r.ctx.Cwd) {
		cwdRoot = canonical(filepath.Clean(r.ctx.Cwd))
	}
	for _, rt := range r.roots {
		if rt.path == "/" || !rt.dir {
			continue
		}
		cands = append(cands, r.defaultCarves(rt.path, rt.path == cwdRoot)...)
		for _, name := range metadataNames() {
			if meta := filepath.Join(rt.path, name); !r.metadataWritable(meta) {
				cands = append(cands, carve{path: meta})
			}
		}
	}
	// Narrower non-writable entries, kept in their raw in-root form.
	for _, e := range r.entries {
		if e.access != AccessRead || accessOf(r.entries, e.path) != AccessRead {
			continue
		}
		m := r.remap(e.path)
		if !r.insideRoot(m) {
			m = normalizeKeepLink(e.path)
		}
		if r.insideRoot(m) {
			cands = append(cands, carve{path: m, skip: e.skip})
		}
	}
	for _, c := range mergeCarves(cands) {
		if s := firstWritableSymlink(c.path, r.writable); s != "" {
			return &SymlinkCrossingError{Path: c.path, Symlink: s}
		}
		if !lexists(c.path) {
			if !c.skip {
				r.watchMissing(c.path)
				if r.placeholderFor(c.path, cwdRoot) {
					r.placeholders = dedup(append(r.placeholders, c.path))
				}
			}
			continue
		}
		if rt := r.owner(c.path); rt != nil {
			rt.readOnly = append(rt.readOnly, c.path)
		}
	}
	return nil
}

// defaultCarves returns the default read-only subpaths of a root, minus
// those configured explicitly: .git (directory or file, plus the gitdir a
// `gitdir:` file points to), .agents if a directory, and .codex if a
// directory or if the root is the policy cwd.
func (r *resolver) defaultCarves(rootPath string, isCwd bool) []carve {
	var out []carve
	add := func(p string) {
		if !r.explicit(p) {
			out = append(out, carve{path: p})
		}
	}
	git := filepath.Join(rootPath, ".git")
	if fi, err := os.Stat(git); err == nil && (fi.IsDir() || fi.Mode().IsRegular()) {
		if fi.Mode().IsRegular() {
			if dir := gitdirOf(git); dir != "" {
				add(dir)
			}
		}
		add(git)
	}
	if fi, err := os.Stat(filepath.Join(rootPath, ".agents")); err == nil && fi.IsDir() {
		add(filepath.Join(rootPath, ".agents"))
	}
	codex := filepath.Join(rootPath, ".codex")
	if fi, err := os.Stat(codex); isCwd || (err == nil && fi.IsDir()) {
		add(codex)
	}
	return out
}

// maxGitPointer bounds what is read of a `.git` pointer file: a real one
// is one line of a path.
const maxGitPointer = 8 << 10

// gitdirOf reads a `gitdir: <path>` pointer file and returns the target,
// resolved relative to the file's directory, if it exists. The file may
// have been planted by an earlier sandboxed run: it is read only if it is
// a regular file and not a symlink, without blocking (a FIFO), and only
// its first maxGitPointer bytes (a sparse file of a terabyte).
func gitdirOf(dotGit string) string {
	b, err := readPointerFile(dotGit)
	if err != nil {
		return ""
	}
	rest, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
	rest = strings.TrimSpace(rest)
	if !ok || rest == "" {
		return ""
	}
	target := joinSubpath(filepath.Dir(dotGit), rest)
	if !lexists(target) {
		return ""
	}
	return target
}

// mergeCarves de-duplicates candidates; a path is skippable only if every
// source says so.
func mergeCarves(cands []carve) []carve {
	var out []carve
	index := map[string]int{}
	for _, c := range cands {
		if i, ok := index[c.path]; ok {
			out[i].skip = out[i].skip && c.skip
			continue
		}
		index[c.path] = len(out)
		out = append(out, c)
	}
	return out
}

// placeholderFor reports whether a missing protected path is shadowed by
// a read-only placeholder (docs/sandbox.md §4.3 step 5): .codex right below the
// cwd's root, .agents and .git right below any directory root, except a
// .git whose root sits inside a parent git repository (a placeholder would
// break `git rev-parse`). The others stay watched.
func (r *resolver) placeholderFor(path, cwdRoot string) bool {
	name, parent := filepath.Base(path), filepath.Dir(path)
	isMeta := false
	for _, m := range metadataNames() {
		isMeta = isMeta || name == m
	}
	if !isMeta {
		return false
	}
	for _, rt := range r.roots {
		if rt.path == parent && rt.dir && rt.path != "/" {
			switch name {
			case ".codex":
				return rt.path == cwdRoot
			case ".git":
				return !insideParentRepo(rt.path)
			}
			return true
		}
	}
	return false
}

// insideParentRepo reports whether an ancestor of dir holds a git
// repository: a .git directory with HEAD, or a `gitdir:` file.
func insideParentRepo(dir string) bool {
	for a := filepath.Dir(dir); ; a = filepath.Dir(a) {
		git := filepath.Join(a, ".git")
		if fi, err := os.Stat(git); err == nil {
			if fi.IsDir() && lexists(filepath.Join(git, "HEAD")) {
				return true
			}
			if fi.Mode().IsRegular() && gitdirOf(git) != "" {
				return true
			}
		}
		if a == "/" {
			return false
		}
	}
}

// watchMissing records the first missing component of path for the
// protected-create watcher, if it would land inside a writable root.
func (r *resolver) watchMissing(path string) {
	if fm := firstMissing(path); fm != "" && withinAny(fm, r.canonicalRoots()) {
		r.protect = dedup(append(r.protect, fm))
	}
}

// denyPaths returns the existing exact deny paths (never "/"), after the
// fail-closed symlink check; missing ones inside a writable root are
// watched instead.
func (r *resolver) denyPaths() ([]string, error) {
	var out []string
	for _, e := range r.entries {
		if e.access != AccessDeny || e.path == "/" {
			continue
		}
		d := normalizeKeepLink(r.remap(e.path))
		if s := firstWritableSymlink(d, r.writable); s != "" {
			return nil, &SymlinkCrossingError{Deny: true, Path: d, Symlink: s}
		}
		if !lexists(d) {
			if !e.skip {
				r.watchMissing(d)
			}
			continue
		}
		out = append(out, d)
	}
	return dedup(out), nil
}

// readPointerFile returns at most maxGitPointer bytes of the regular file
// path, never following a final symlink and never blocking on open.
func readPointerFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	return io.ReadAll(io.LimitReader(f, maxGitPointer))
}
