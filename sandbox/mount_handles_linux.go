//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/codexec/codex/internal/fsat"
	"golang.org/x/sys/unix"
)

// bindRoot binds the writable root r onto itself read-write, from and onto
// a handle opened without following symlinks and checked against the
// plan's identity, then its read-only carve-outs, each opened below the new
// mount. A root that no longer exists is skipped (nothing becomes
// writable); one that is now reached through a symlink, or is another file,
// refuses the run.
func bindRoot(p *Plan, r WritableRoot) error {
	fd, err := openPlanned(p, unix.AT_FDCWD, r.Path, r.Path, "writable root")
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	mnt := fd
	if r.Path != "/" {
		clone, err := bindOnto(fd)
		if err != nil {
			return mountErr("bind writable root", r.Path, err)
		}
		defer unix.Close(clone)
		mnt = clone
	}
	if err := setReadOnly(mnt, "", false, false); err != nil {
		return err
	}
	ro := slices.Clone(r.ReadOnly)
	slices.SortStableFunc(ro, func(a, b string) int { return mountDepth(a) - mountDepth(b) })
	for _, c := range ro {
		rel := strings.TrimPrefix(strings.TrimPrefix(c, r.Path), "/")
		if rel == "" || !isStrictlyBelow(c, r.Path) {
			continue
		}
		cfd, err := openPlanned(p, mnt, rel, c, "read-only path")
		if errors.Is(err, unix.ENOENT) {
			continue // gone since resolution: missing metadata is the watcher's job
		}
		if err != nil {
			return err
		}
		clone, err := bindOnto(cfd)
		unix.Close(cfd)
		if err != nil {
			return mountErr("bind read-only path", c, err)
		}
		// mount_setattr changes only the read-only bit, so the
		// nosuid/nodev/noexec flags that a user namespace locks are kept
		// as they are.
		err = setReadOnly(clone, "", true, true)
		unix.Close(clone)
		if err != nil {
			return err
		}
	}
	return nil
}

// bindOnto clones the mount tree at the handle fd (recursively) and
// attaches the clone onto fd itself, like `mount --rbind p p` without the
// path. It returns the attached clone's handle.
func bindOnto(fd int) (int, error) {
	clone, err := unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_EMPTY_PATH)
	if err != nil {
		return -1, err
	}
	if err := unix.MoveMount(clone, "", fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		unix.Close(clone)
		return -1, err
	}
	return clone, nil
}

// openPlanned opens rel below dirfd (an absolute path with AT_FDCWD) as an
// O_PATH handle without following any symlink and checks that it is the
// file the plan recorded for path. ENOENT is returned as is; anything else
// that is not the recorded file is a refusal.
func openPlanned(p *Plan, dirfd int, rel, path, what string) (int, error) {
	fd, err := fsat.OpenPath(dirfd, rel)
	switch {
	case err == unix.ENOENT:
		return -1, err
	case err == unix.ELOOP || err == unix.EXDEV:
		return -1, fmt.Errorf("cannot enforce sandbox %s %s: it is reached through a symlink now", what, path)
	case err != nil:
		return -1, mountErr("open "+what, path, err)
	}
	got, err := fsat.Stat(fd)
	if err != nil {
		unix.Close(fd)
		return -1, mountErr("stat "+what, path, err)
	}
	want, ok := p.Identities[path]
	if !ok {
		unix.Close(fd)
		return -1, fmt.Errorf("cannot enforce sandbox %s %s: the plan records no identity for it", what, path)
	}
	if got != want {
		unix.Close(fd)
		return -1, fmt.Errorf("cannot enforce sandbox %s %s: it is not the file the policy was resolved against (replaced since)", what, path)
	}
	return fd, nil
}

// mountPlaceholders shadows each placeholder of the plan with an empty
// read-only tmpfs of mode 555 (docs/sandbox.md §4.3 step 5), so that creating
// anything there fails with EROFS. The mountpoints are the empty
// directories the server made on the host. A placeholder that cannot be
// mounted on (no mountpoint, no new mount API) is left to the watcher and
// reported on stderr; one that is now a symlink or another file refuses
// the run. It returns the placeholders it mounted.
func mountPlaceholders(p *Plan) (map[string]bool, error) {
	if len(p.Placeholders) == 0 {
		return nil, nil
	}
	shadowed := map[string]bool{}
	src := -1
	defer func() {
		if src >= 0 {
			unix.Close(src)
		}
	}()
	for _, ph := range p.Placeholders {
		fd, err := fsat.Open(unix.AT_FDCWD, ph, unix.O_PATH|unix.O_DIRECTORY)
		if err == unix.ELOOP || err == unix.EXDEV {
			return nil, fmt.Errorf("cannot enforce sandbox protected path %s: it is reached through a symlink now", ph)
		}
		if err == nil {
			if want, ok := p.Identities[ph]; ok {
				if got, serr := fsat.Stat(fd); serr != nil || got != want {
					unix.Close(fd)
					return nil, fmt.Errorf("cannot enforce sandbox protected path %s: it is not the placeholder the server made", ph)
				}
			}
			if src < 0 {
				src, err = placeholderFS()
			}
			if err == nil {
				err = attachPlaceholder(src, fd)
			}
			unix.Close(fd)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: no read-only placeholder on %s (%v); watching it instead\n", HelperName, ph, err)
			continue
		}
		shadowed[ph] = true
	}
	return shadowed, nil
}

// placeholderFS returns a detached, empty, read-only tmpfs of mode 555:
// the source of every placeholder mount.
func placeholderFS() (int, error) {
	fd, err := newFS("tmpfs", map[string]string{"mode": "555", "size": "4k"},
		unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return -1, err
	}
	if err := setReadOnly(fd, "", true, false); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// attachPlaceholder attaches a clone of the placeholder tmpfs src onto the
// directory handle fd, read-only.
func attachPlaceholder(src, fd int) error {
	clone, err := unix.OpenTree(src, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH)
	if err != nil {
		return err
	}
	defer unix.Close(clone)
	if err := unix.MoveMount(clone, "", fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return err
	}
	return setReadOnly(clone, "", true, false)
}
