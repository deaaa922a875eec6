//go:build linux

package sandbox

import (
	"path/filepath"
	"slices"

	"github.com/codexec/codex/internal/fsat"
	"golang.org/x/sys/unix"
)

// adoptShared turns read-only carve-outs that are really placeholders back
// into placeholders: metadata names right below a root that are another
// run's placeholder (Resolve saw it as an existing directory: empty,
// without write bits and held by a lock now), or, unless heldOnly, that
// vanished since resolution (that run removed its placeholder in between).
// Binding them read-only instead would lose the bind when that placeholder
// is removed after the other run. A directory nobody holds (a placeholder
// left by a killed process, or the user's own) stays a carve-out.
func adoptShared(plan *Plan, roots map[string]int, heldOnly bool) {
	for i := range plan.WritableRoots {
		w := &plan.WritableRoots[i]
		rootfd, ok := roots[w.Path]
		if !ok {
			continue
		}
		w.ReadOnly = slices.DeleteFunc(w.ReadOnly, func(c string) bool {
			name := filepath.Base(c)
			if filepath.Dir(c) != w.Path || !isMetadataName(name) {
				return false
			}
			if st := placeholderState(rootfd, name); st != phHeld && (heldOnly || st != phGone) {
				return false
			}
			if !slices.Contains(plan.Placeholders, c) {
				plan.Placeholders = append(plan.Placeholders, c)
			}
			if !slices.Contains(plan.ProtectedCreate, c) {
				plan.ProtectedCreate = append(plan.ProtectedCreate, c)
			}
			delete(plan.Identities, c)
			return true
		})
	}
	sortByDepth(plan.Placeholders)
}

// What placeholderState finds at a name.
const (
	phOther = iota // anything else, a directory nobody holds included
	phHeld         // a placeholder someone holds a lock on
	phGone         // missing, or removed or replaced while we looked
)

// placeholderState tells whether name below dirfd is missing, a
// placeholder someone holds, or was removed or replaced while we looked
// (its holder let it go meanwhile; a removed directory no longer lists as
// empty).
func placeholderState(dirfd int, name string) int {
	fd, err := fsat.Open(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY)
	if err == unix.ENOENT {
		return phGone
	}
	if err != nil {
		return phOther
	}
	defer unix.Close(fd)
	id, err := fsat.Stat(fd)
	if err != nil {
		return phOther
	}
	if placeholderLike(fd) && unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) == unix.EWOULDBLOCK {
		return phHeld
	}
	// Nobody holds it: still there, it is a leftover or the user's.
	if cur, _, err := fsat.StatAt(dirfd, name); err != nil || cur != id {
		return phGone
	}
	return phOther
}

// Release runs after the run (the helper is gone, whatever killed it):
// watched names the run left behind are removed below their parent's
// handle without following anything, and the run's placeholders are let
// go; one that no other run holds is removed (when empty) with
// unlinkat(AT_REMOVEDIR). A nil guard does nothing. Call it once.
func (g *HostGuard) Release() {
	if g == nil {
		return
	}
	for _, it := range g.items {
		switch {
		case it.lockfd >= 0:
			g.drop(it)
		case it.sweep:
			if g.shareOnly && placeholderState(it.parentfd, it.name) == phHeld {
				break // another run's placeholder, made since: see spareHeld
			}
			// EACCES: the command may have taken the root's search
			// permission away from a server of its uid (moveAside gives
			// it back).
			if _, _, err := fsat.StatAt(it.parentfd, it.name); err == nil || err == unix.EACCES {
				g.warn("removing protected path created by a sandboxed process", it.path, nil)
				g.removeLeftover(it)
			}
		}
		unix.Close(it.parentfd)
	}
	g.items = nil
	for _, fd := range g.carve {
		unix.Close(fd)
	}
	g.carve = nil
}

// guardCarveOuts holds a carve-out guard (holdCarveOut) on every
// read-only carve-out of the plan that is a metadata name right below a
// root and looks like a placeholder nobody holds (a leftover, or the
// user's), so that no remover unshadows it during the run. One that
// vanished meanwhile is shadowed instead, unless the plan makes no
// placeholders.
func (g *HostGuard) guardCarveOuts(plan *Plan, roots map[string]int) {
	for i := range plan.WritableRoots {
		w := &plan.WritableRoots[i]
		rootfd, ok := roots[w.Path]
		if !ok {
			continue
		}
		w.ReadOnly = slices.DeleteFunc(w.ReadOnly, func(c string) bool {
			if filepath.Dir(c) != w.Path || !isMetadataName(filepath.Base(c)) {
				return false
			}
			fd, gone := holdCarveOut(rootfd, filepath.Base(c))
			if fd >= 0 {
				g.carve = append(g.carve, fd)
			}
			if !gone || g.shareOnly {
				return false
			}
			if !slices.Contains(plan.Placeholders, c) {
				plan.Placeholders = append(plan.Placeholders, c)
			}
			if !slices.Contains(plan.ProtectedCreate, c) {
				plan.ProtectedCreate = append(plan.ProtectedCreate, c)
			}
			delete(plan.Identities, c)
			return true
		})
	}
	sortByDepth(plan.Placeholders)
}

// drop lets go of the placeholder of it, removing it if nobody else holds
// it. Holding LOCK_EX while removing is what makes an acquirer that locked
// the directory in between see that the name no longer leads to it.
func (g *HostGuard) drop(it guardItem) {
	watchLet(it.token) // first: the watchdog's reference shares our lock
	defer unix.Close(it.lockfd)
	if err := unix.Flock(it.lockfd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return // another run holds it: theirs to remove
	}
	if carveOutHeld(it.lockfd) {
		return // a run binds it as a carve-out: removing it would unshadow the name there
	}
	cur, _, err := fsat.StatAt(it.parentfd, it.name)
	if err != nil || cur != it.id {
		g.warn("a placeholder was removed or replaced while held", it.path, err)
		return
	}
	err = unix.Unlinkat(it.parentfd, it.name, unix.AT_REMOVEDIR)
	if err == unix.ENOTEMPTY {
		// Only a command whose helper could not mount on it can have
		// written there, after its watcher's last look: nobody else holds
		// it, so all of it goes.
		g.warn("removing protected path created by a sandboxed process", it.path, nil)
		g.removeLeftover(it)
		return
	}
	if err != nil {
		g.warn("cannot remove a placeholder", it.path, err)
	}
}

// removeLeftover moves what a sandboxed run left at a protected name
// aside (moveAside), on a thread without capabilities, and deletes none
// of it. The server works in the host's view, where the sandbox's
// read-only binds and masks are not: a command renames the folder that
// holds a read-only file (a bind covers one dentry, its folder can be
// renamed) to a protected name and keeps moving it back there until it
// is killed, and a removal would delete the file for it. Without
// capabilities, the server, often root, does no more than the command
// could (rename another user's folder in a sticky one). The helper's
// watcher, in the sandbox's view, is the one that removes.
func (g *HostGuard) removeLeftover(it guardItem) {
	var aside string
	var err error
	if cerr := withoutCapabilities(func() { aside, err = moveAside(it.parentfd, it.name) }); cerr != nil {
		err = cerr
	}
	if err != nil {
		g.warn("moving aside protected path", it.path, err)
	}
	if aside != "" {
		g.warn("moved aside what a sandboxed process left at a protected path, as "+aside, it.path, nil)
	}
}

// isMetadataName reports whether name is one of the protected workspace
// metadata names.
func isMetadataName(name string) bool {
	for _, m := range metadataNames() {
		if name == m {
			return true
		}
	}
	return false
}
