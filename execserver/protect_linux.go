//go:build linux

package execserver

import (
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/codexec/codex/internal/fsat"
	"github.com/codexec/codex/sandbox"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// placeholderSet is the server's registry of the placeholder directories it
// made on the host for missing protected names (sandbox.Plan.Placeholders):
// concurrent runs in the same root share one, and the last run to end
// removes it. The zero value is empty and ready; it is safe for concurrent
// use.
//
// A placeholder is keyed by its parent directory's identity and its name,
// never by path: the server opens every directory inside a writable root
// with openat2(RESOLVE_NO_SYMLINKS), below the root's handle with
// RESOLVE_BENEATH, and works relative to those handles only. A sandboxed
// command may rename or replace anything inside its roots; a handle keeps
// pointing at the directory it was opened on.
type placeholderSet struct {
	mu    sync.Mutex
	byKey map[placeholderKey]*placeholder // guarded by mu
}

// placeholderKey names a placeholder: its parent directory and name.
type placeholderKey struct {
	parent fsat.ID
	name   string
}

// placeholder is one placeholder directory the server made.
type placeholder struct {
	refs     int
	id       fsat.ID // the directory itself
	parentfd int     // O_PATH handle on the parent, owned by the entry
}

// protectGuard is what one sandboxed run holds on its protected names:
// handles on their parent directories, opened at plan time, and references
// on the placeholders it shares. release undoes it after the run.
type protectGuard struct {
	set   *placeholderSet
	log   *zap.Logger
	items []guardItem
}

// guardItem is one protected name of the run.
type guardItem struct {
	path     string
	parentfd int
	name     string
	// held is set when the run holds a reference on the placeholder.
	held bool
	key  placeholderKey
	// sweep is set for names that are watched rather than shadowed: the
	// run's leftovers are removed afterwards.
	sweep bool
}

// guard opens the parents of the plan's protected names (the missing
// metadata, watched or shadowed) and makes or shares the placeholder
// directories the helper mounts on, recording their identities in the
// plan. A placeholder carve-out that Resolve saw as an existing directory
// (another run's placeholder) is turned back into a placeholder the run
// shares. Problems are logged, never fatal: the helper refuses a plan it
// cannot enforce, and falls back to watching where it cannot mount.
func (s *placeholderSet) guard(plan *sandbox.Plan, log *zap.Logger) *protectGuard {
	g := &protectGuard{set: s, log: log}
	roots := map[string]int{}
	defer func() {
		for _, fd := range roots {
			unix.Close(fd)
		}
	}()
	for _, w := range plan.WritableRoots {
		fd, err := fsat.OpenPath(unix.AT_FDCWD, w.Path)
		if err != nil {
			continue
		}
		if id, err := fsat.Stat(fd); err != nil || id != plan.Identities[w.Path] {
			unix.Close(fd) // replaced since resolution: the helper refuses the run
			continue
		}
		roots[w.Path] = fd
	}
	s.adoptShared(plan, roots, log)
	shadow := map[string]bool{}
	for _, p := range plan.Placeholders {
		shadow[p] = true
	}
	for _, path := range plan.ProtectedCreate {
		it, ok := openParent(plan, roots, path)
		if !ok {
			log.Debug("no handle on the parent of a protected path", zap.String("path", path))
			continue
		}
		if !shadow[path] {
			it.sweep = true
		} else if !s.acquire(plan, &it, log) {
			unix.Close(it.parentfd)
			continue // someone else's: leave it alone
		}
		g.items = append(g.items, it)
	}
	return g
}

// openParent opens the parent directory of path below the handle of the
// deepest writable root that contains it.
func openParent(plan *sandbox.Plan, roots map[string]int, path string) (guardItem, bool) {
	best := ""
	for r := range roots {
		if strings.HasPrefix(path, strings.TrimSuffix(r, "/")+"/") && len(r) > len(best) {
			best = r
		}
	}
	if best == "" {
		return guardItem{}, false
	}
	rel, err := filepath.Rel(best, filepath.Dir(path))
	if err != nil || strings.HasPrefix(rel, "..") {
		return guardItem{}, false
	}
	fd, err := fsat.Open(roots[best], rel, unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return guardItem{}, false
	}
	return guardItem{path: path, parentfd: fd, name: filepath.Base(path)}, true
}

// acquire takes a reference on the placeholder of it, making the directory
// with mkdirat on the parent's handle if no run holds it yet, and records
// its identity in the plan. It reports false when the name exists and is
// not ours.
func (s *placeholderSet) acquire(plan *sandbox.Plan, it *guardItem, log *zap.Logger) bool {
	parent, err := fsat.Stat(it.parentfd)
	if err != nil {
		return false
	}
	key := placeholderKey{parent: parent, name: it.name}
	s.mu.Lock()
	defer s.mu.Unlock()
	ph := s.byKey[key]
	if ph == nil {
		if err := unix.Mkdirat(it.parentfd, it.name, 0o555); err != nil {
			if err != unix.EEXIST {
				log.Warn("cannot make a placeholder for a protected path", zap.String("path", it.path), zap.Error(err))
			}
			return false
		}
		id, _, err := fsat.StatAt(it.parentfd, it.name)
		dup, derr := unix.FcntlInt(uintptr(it.parentfd), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil || derr != nil {
			_ = unix.Unlinkat(it.parentfd, it.name, unix.AT_REMOVEDIR)
			if derr == nil {
				unix.Close(dup)
			}
			return false
		}
		ph = &placeholder{id: id, parentfd: dup}
		if s.byKey == nil {
			s.byKey = map[placeholderKey]*placeholder{}
		}
		s.byKey[key] = ph
	}
	ph.refs++
	it.held, it.key = true, key
	if plan.Identities == nil {
		plan.Identities = map[string]fsat.ID{}
	}
	plan.Identities[it.path] = ph.id
	return true
}

// adoptShared turns read-only carve-outs that are really placeholders back
// into placeholders: metadata names right below a root that are one of
// ours (Resolve saw another run's placeholder as an existing directory), or
// that vanished since resolution (the last run removed its placeholder in
// between). Binding them read-only instead would lose them when that
// placeholder is removed.
func (s *placeholderSet) adoptShared(plan *sandbox.Plan, roots map[string]int, log *zap.Logger) {
	s.mu.Lock()
	empty := len(s.byKey) == 0
	s.mu.Unlock()
	for i := range plan.WritableRoots {
		w := &plan.WritableRoots[i]
		rootfd, ok := roots[w.Path]
		if !ok {
			continue
		}
		parent, err := fsat.Stat(rootfd)
		if err != nil {
			continue
		}
		w.ReadOnly = slices.DeleteFunc(w.ReadOnly, func(c string) bool {
			name := filepath.Base(c)
			if filepath.Dir(c) != w.Path || (name != ".codex" && name != ".agents" && name != ".git") {
				return false
			}
			id, _, err := fsat.StatAt(rootfd, name)
			switch {
			case err == unix.ENOENT:
			case err == nil && !empty && s.owns(placeholderKey{parent, name}, id):
			default:
				return false
			}
			log.Debug("sharing a placeholder", zap.String("path", c))
			plan.Placeholders = append(plan.Placeholders, c)
			if !slices.Contains(plan.ProtectedCreate, c) {
				plan.ProtectedCreate = append(plan.ProtectedCreate, c)
			}
			delete(plan.Identities, c)
			return true
		})
	}
}

// owns reports whether key is a placeholder of ours with identity id.
func (s *placeholderSet) owns(key placeholderKey, id fsat.ID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ph := s.byKey[key]
	return ph != nil && ph.id == id
}

// release runs after the run (the helper is gone, whatever killed it):
// watched names the run left behind are removed below their parent's
// handle without following anything, and the run's placeholder references
// are dropped; the last one removes the (empty) placeholder with
// unlinkat(AT_REMOVEDIR). A nil guard does nothing. Call it once.
func (g *protectGuard) release() {
	if g == nil {
		return
	}
	for _, it := range g.items {
		switch {
		case it.held:
			g.set.drop(it, g.log)
		case it.sweep:
			if _, _, err := fsat.StatAt(it.parentfd, it.name); err == nil {
				g.log.Warn("removing protected path created by a sandboxed process", zap.String("path", it.path))
				if err := fsat.RemoveAllAt(it.parentfd, it.name); err != nil {
					g.log.Warn("removing protected path", zap.String("path", it.path), zap.Error(err))
				}
			}
		}
		unix.Close(it.parentfd)
	}
	g.items = nil
}

// drop releases one reference on the placeholder of it.
func (s *placeholderSet) drop(it guardItem, log *zap.Logger) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ph := s.byKey[it.key]
	if ph == nil {
		return
	}
	if ph.refs--; ph.refs > 0 {
		return
	}
	delete(s.byKey, it.key)
	defer unix.Close(ph.parentfd)
	id, _, err := fsat.StatAt(ph.parentfd, it.name)
	if err != nil || id != ph.id {
		return // gone or replaced: not ours to remove
	}
	if err := unix.Unlinkat(ph.parentfd, it.name, unix.AT_REMOVEDIR); err != nil {
		log.Warn("cannot remove a placeholder", zap.String("path", it.path), zap.Error(err))
	}
}
