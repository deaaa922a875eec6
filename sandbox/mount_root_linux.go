//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// rootAlias is a symlink to recreate in the restricted root, such as
// /bin -> usr/bin on a merged-/usr system.
type rootAlias struct {
	path, target string
}

// pivotRestrictedRoot makes the process root a new tmpfs that holds only
// clones of the readable roots, the writable roots, /dev and /proc (the
// `minimal` case, docs/sandbox.md §4.3; the rest of the sequence then runs
// inside it). Everything else of the host becomes unreachable: the old
// root is detached after pivot_root.
//
// The clones are taken before the new root is stacked on "/": after that,
// absolute paths still resolve in the old root (the process root is not
// re-evaluated until the pivot), so the new tree is filled relative to its
// own fd.
func pivotRestrictedRoot(p *Plan) error {
	want := slices.Clone(p.ReadableRoots)
	for _, r := range p.WritableRoots {
		want = append(want, r.Path)
	}
	want = append(want, "/dev", "/proc")
	srcs, aliases := rootSources(want)
	clones, err := cloneTrees(srcs)
	defer func() { closeClones(clones) }()
	if err != nil {
		return err
	}

	root, err := newFS("tmpfs", map[string]string{"mode": "0755", "size": "1m"},
		unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
	if err != nil {
		return mountErr("tmpfs for the restricted root", "", err)
	}
	defer unix.Close(root)
	if err := unix.MoveMount(root, "", unix.AT_FDCWD, "/", unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return mountErr("stack the restricted root on", "/", err)
	}
	if err := attachClones(root, "/", clones, 0o755); err != nil {
		return err
	}
	for _, a := range aliases {
		rel := strings.TrimPrefix(a.path, "/")
		if mkdirAllAt(root, filepath.Dir(rel), 0o755) != nil {
			continue // an alias below another alias: the canonical path is there
		}
		if err := unix.Symlinkat(a.target, root, rel); err != nil && err != unix.EEXIST {
			return mountErr("symlink", a.path, err)
		}
	}
	if err := unix.Fchdir(root); err != nil {
		return mountErr("enter the restricted root", "", os.NewSyscallError("fchdir", err))
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return mountErr("pivot_root to the restricted root", "", os.NewSyscallError("pivot_root", err))
	}
	// The old root is now stacked on top of the new one: detach it.
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return mountErr("detach the old root", "", os.NewSyscallError("umount2", err))
	}
	return os.Chdir("/")
}

// rootSources resolves paths to the existing canonical paths to clone,
// de-duplicated, plus the symlinks among paths to recreate as aliases.
func rootSources(paths []string) (srcs []string, aliases []rootAlias) {
	seen := map[string]bool{}
	for _, p := range paths {
		p = filepath.Clean(p)
		c, err := filepath.EvalSymlinks(p)
		if err != nil {
			continue // missing: nothing to show
		}
		if !seen[c] {
			seen[c] = true
			srcs = append(srcs, c)
		}
		if c == p {
			continue
		}
		if st, err := os.Lstat(p); err == nil && st.Mode()&os.ModeSymlink != 0 {
			if t, err := os.Readlink(p); err == nil {
				aliases = append(aliases, rootAlias{path: p, target: t})
			}
		}
	}
	slices.SortStableFunc(aliases, func(a, b rootAlias) int { return mountDepth(a.path) - mountDepth(b.path) })
	return srcs, aliases
}
