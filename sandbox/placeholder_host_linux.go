//go:build linux

package sandbox

import (
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/codexec/codex/internal/fsat"
	"golang.org/x/sys/unix"
)

// Placeholders shared across processes (docs/sandbox.md §4.3 step 5).
//
// A placeholder is an empty directory without write bits, made on the host
// with mkdirat below a verified handle on its parent; every sandbox helper
// whose plan names it mounts a read-only tmpfs on it. Several processes
// (exec-servers, `codex sandbox`, the fs helper of a server) may sandbox
// runs in the same writable root at once, and /tmp is one for most runs
// on a host, so a placeholder is shared by whoever needs it, whatever
// process they are in:
//
//   - every run that uses a placeholder holds an open file description on
//     it with flock(LOCK_SH) from before its helper starts until the
//     helper is gone;
//   - an acquirer takes LOCK_SH and then checks that the name still
//     leads to the directory it locked (else it was removed in between,
//     and it tries again, making a new one if needed);
//   - removal takes flock(LOCK_EX|LOCK_NB) and removes the directory (by
//     its parent's handle) only when that succeeds, that is when no other
//     run holds it.
//
// Removing a directory that is a mount point in another mount namespace
// detaches that mount there, so this rule is what keeps one run's end from
// unshadowing the name for another. Nobody else removes a held
// placeholder: the same names are placeholders in every command's plan
// that protects them (GuardPlan widens the plan so; only a .git inside a
// parent repository is watched, in every plan alike); a helper that falls
// back to watching a placeholder it could not mount on spares the
// directory whose identity the plan recorded (child_watch_linux.go); and
// an fs operation, which makes no placeholders, spares those held by
// others.
//
// A sandboxed command cannot use the locks to keep a name: it can flock
// only what it can open, its own placeholders are covered by their mounts,
// a command's watcher spares nothing but the identity the host recorded
// in the plan before the command started (a file the command cannot
// write), and a directory is only adopted as a shared placeholder when it
// is empty, without write bits and held by a lock at that moment, which is
// harmless at worst: such a directory gets shadowed and removed.

// GuardLog receives the host guard's problems: a message, the path and
// the error (nil when there is none). A nil GuardLog discards them.
type GuardLog func(msg, path string, err error)

// HostGuard is what one sandboxed run holds on the host for its protected
// names: handles on their parent directories, opened at plan time, and a
// shared lock on each placeholder it uses. Release undoes it after the
// run. A nil *HostGuard holds nothing; its Release does nothing.
type HostGuard struct {
	log       GuardLog
	items     []guardItem
	carve     []int // carve-out guards held for the run (holdCarveOut)
	shareOnly bool  // an fs helper's plan: no placeholders made
}

// guardItem is one protected name of the run.
type guardItem struct {
	path     string
	parentfd int
	name     string
	// lockfd is the placeholder held with LOCK_SH, or -1.
	lockfd int
	id     fsat.ID
	// token is the process's PlaceholderWatch's for the held placeholder
	// (0: none).
	token uint64
	// sweep is set for names that are watched rather than shadowed: the
	// run's leftovers are removed afterwards.
	sweep bool
}

// acquireTries bounds how often acquire retries while a remover holds the
// placeholder exclusively (a moment) or the name keeps changing.
const acquireTries = 200

// GuardPlan opens the parents of the plan's protected names and makes or
// shares the placeholders the helper mounts on, recording their identities
// in the plan. Before that it widens the plan's placeholders to every
// missing metadata name right below a directory root (but a .git inside a
// parent repository), so that a name is shadowed in every plan or watched
// in every plan, and it turns read-only carve-outs that are really another
// run's placeholder (Resolve saw it as an existing directory) or that
// vanished since resolution back into placeholders. For an fs helper's
// plan (FSHelper) it only shares the placeholders other runs hold and
// makes none. Problems are logged, never fatal: the helper refuses a plan
// it cannot enforce, and falls back to watching where it cannot mount.
func GuardPlan(plan *Plan, log GuardLog) *HostGuard {
	g := &HostGuard{log: log}
	roots := openRoots(plan)
	defer func() {
		for _, fd := range roots {
			unix.Close(fd)
		}
	}()
	// An fs operation sees the tree as it is: it makes no placeholders
	// (a missing .git stays missing for fs/getMetadata), it only shares
	// those other runs hold, and its watcher spares them.
	g.shareOnly = plan.FSHelper
	if g.shareOnly {
		plan.Placeholders = nil
	} else {
		widenPlaceholders(plan)
	}
	adoptShared(plan, roots, g.shareOnly)
	g.guardCarveOuts(plan, roots)
	for _, path := range plan.ProtectedCreate {
		it, ok := openParent(roots, path)
		if !ok {
			g.warn("no handle on the parent of a protected path", path, nil)
			continue
		}
		if !slices.Contains(plan.Placeholders, path) {
			it.sweep = true
		} else if !g.acquire(plan, &it) {
			unix.Close(it.parentfd)
			continue // not a placeholder: the helper mounts on it or watches it
		}
		g.items = append(g.items, it)
	}
	return g
}

func (g *HostGuard) warn(msg, path string, err error) {
	if g.log != nil {
		g.log(msg, path, err)
	}
}

// openRoots opens every writable root of the plan that still is the file
// Resolve saw, keyed by path.
func openRoots(plan *Plan) map[string]int {
	roots := map[string]int{}
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
	return roots
}

// widenPlaceholders shadows every missing metadata name right below a
// writable root that the plan watches, but a .git inside a parent
// repository: Resolve shadows .codex below the cwd's root only, and a name
// watched in one run while another shadows it would be removed by the
// watcher from under the other's mount.
func widenPlaceholders(plan *Plan) {
	for _, p := range plan.ProtectedCreate {
		name, parent := filepath.Base(p), filepath.Dir(p)
		if !isMetadataName(name) || slices.Contains(plan.Placeholders, p) || parent == "/" {
			continue
		}
		isRoot := slices.ContainsFunc(plan.WritableRoots, func(w WritableRoot) bool { return w.Path == parent })
		if isRoot && !(name == ".git" && insideParentRepo(parent)) {
			plan.Placeholders = append(plan.Placeholders, p)
		}
	}
	sortByDepth(plan.Placeholders)
}

// openParent opens the parent directory of path below the handle of the
// deepest writable root that contains it.
func openParent(roots map[string]int, path string) (guardItem, bool) {
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
	return guardItem{path: path, parentfd: fd, name: filepath.Base(path), lockfd: -1}, true
}

// acquire holds the placeholder of it with LOCK_SH, making the directory
// with mkdirat on the parent's handle if it is missing, and records its
// identity in the plan. It reports false when the name is something else
// than a placeholder (left alone), or when it cannot be held.
func (g *HostGuard) acquire(plan *Plan, it *guardItem) bool {
	for try := 0; try < acquireTries; try++ {
		fd, err := fsat.Open(it.parentfd, it.name, unix.O_RDONLY|unix.O_DIRECTORY)
		if err == unix.ENOENT && g.shareOnly {
			return false // gone: watched instead
		}
		if err == unix.ENOENT {
			if err := unix.Mkdirat(it.parentfd, it.name, 0o555); err != nil && err != unix.EEXIST {
				g.warn("cannot make a placeholder for a protected path", it.path, err)
				return false
			}
			continue
		}
		if err != nil {
			return false // a symlink or a file: not a placeholder
		}
		id, ok, retry := holdPlaceholder(fd, it.parentfd, it.name)
		if ok {
			it.lockfd, it.id = fd, id
			it.token = watchHold(it.parentfd, fd, it.path, id)
			if plan.Identities == nil {
				plan.Identities = map[string]fsat.ID{}
			}
			plan.Identities[it.path] = id
			return true
		}
		unix.Close(fd)
		if !retry {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	g.warn("cannot share the placeholder of a protected path: held exclusively", it.path, nil)
	return false
}

// holdPlaceholder takes LOCK_SH on the directory fd and checks that name
// below parentfd still is that directory and that it looks like a
// placeholder. retry reports a lock held exclusively or a name that
// changed meanwhile.
func holdPlaceholder(fd, parentfd int, name string) (id fsat.ID, ok, retry bool) {
	if err := unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB); err != nil {
		return fsat.ID{}, false, err == unix.EWOULDBLOCK || err == unix.EINTR
	}
	id, err := fsat.Stat(fd)
	if err != nil {
		return fsat.ID{}, false, false
	}
	if cur, _, err := fsat.StatAt(parentfd, name); err != nil || cur != id {
		return fsat.ID{}, false, true // removed or replaced since we opened it
	}
	return id, placeholderLike(fd), false
}

// placeholderLike reports whether the directory fd is empty and has no
// write bits, as every placeholder is.
func placeholderLike(fd int) bool {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Mode&0o222 != 0 {
		return false
	}
	return emptyDir(fd)
}

// emptyDir reports whether the directory fd has no entries; it reads
// from fd's offset, which it leaves at the end.
func emptyDir(fd int) bool {
	names, err := dirNames(fd)
	return err == nil && len(names) == 0
}
