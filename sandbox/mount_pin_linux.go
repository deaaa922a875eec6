//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"
)

// Pins and read-only files (docs/sandbox.md §4.3, between steps 4 and 6).
//
// A mask or a read-only bind covers one dentry. Everything above it inside
// a writable root can still be renamed, so a command could move the
// folder that holds a denied file (or our own binary) aside, and the next
// run of the same policy, which finds its paths by name, would no longer
// cover it. Pinning makes each directory between a writable root and such
// a path a mount point of its own: the kernel refuses to rename or remove
// a mount point (EBUSY), also over it, while the directory stays as
// writable as it was.

// pinTargets are the paths whose folders must keep their names: the deny
// paths and links and the read-only files.
func pinTargets(p *Plan) []string {
	return slices.Concat(p.DenyPaths, p.DenyMatches, p.ReadOnlyFiles)
}

// pinDirs returns the directories to pin for targets: for each target
// below a writable top (a writable root, or "/" when the whole base is
// writable), every directory strictly below the shallowest such top down
// to the target's parent. Shallowest first, without duplicates.
func pinDirs(p *Plan, targets []string) []string {
	var tops []string
	for _, r := range p.WritableRoots {
		tops = append(tops, filepath.Clean(r.Path))
	}
	if !p.ReadOnlyRoot && !p.RestrictedRead {
		tops = append(tops, "/")
	}
	seen := map[string]bool{}
	var out []string
	for _, t := range targets {
		t = filepath.Clean(t)
		top := ""
		for _, w := range tops {
			if isStrictlyBelow(t, w) && (top == "" || mountDepth(w) < mountDepth(top)) {
				top = w
			}
		}
		if top == "" {
			continue // read-only all the way up: nothing can be renamed
		}
		for d := filepath.Dir(t); isStrictlyBelow(d, top); d = filepath.Dir(d) {
			if !seen[d] {
				seen[d] = true
				out = append(out, d)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return mountDepth(a) - mountDepth(b) })
	return out
}

// pinPaths pins the folders of the deny paths and read-only files. Each
// directory is opened without following any symlink (the plan's paths are
// canonical; a symlink there now was planted after the plan was made, so
// the helper fails closed) and its mount tree is cloned onto itself,
// keeping the writable roots and carve-outs below it. A directory that is
// already a mount root (a writable root, a carve-out) is left as it is; a
// missing one leaves nothing to protect.
func pinPaths(p *Plan) error {
	for _, d := range pinDirs(p, pinTargets(p)) {
		if err := pinDir(d); err != nil {
			return err
		}
	}
	return nil
}

// pinDir makes the directory d a mount point of its own.
func pinDir(d string) error {
	fd, err := openNoSymlinks(d, unix.O_PATH|unix.O_DIRECTORY)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return mountErr("open folder to pin", d, err)
	}
	defer unix.Close(fd)
	// An existing mount root needs no pin (binding it again would only
	// add a mount); a kernel that cannot tell gets the extra mount.
	if root, _, err := isMountRoot(fd); err != nil {
		return mountErr("statx", d, err)
	} else if root {
		return nil
	}
	tree, err := unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_EMPTY_PATH)
	if err != nil {
		return mountErr("clone folder to pin", d, err)
	}
	defer unix.Close(tree)
	if err := unix.MoveMount(tree, "", fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return mountErr("pin folder", d, err)
	}
	return nil
}

// bindReadOnlyFiles binds each of the plan's read-only files onto itself
// with the read-only attribute: writing it fails with EROFS, and renaming
// or unlinking it, or renaming another file over it, with EBUSY. The file
// is opened without following symlinks and must be a regular file; a
// missing one is skipped (nothing is there to protect).
func bindReadOnlyFiles(p *Plan) error {
	for _, f := range p.ReadOnlyFiles {
		if err := bindReadOnlyFile(f); err != nil {
			return err
		}
	}
	return nil
}

// bindReadOnlyFile makes the regular file f a read-only mount of itself.
func bindReadOnlyFile(f string) error {
	fd, err := openNoSymlinks(f, unix.O_PATH)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return mountErr("open read-only file", f, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return mountErr("stat read-only file", f, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return mountErr("read-only file", f, fmt.Errorf("not a regular file (mode %#o)", st.Mode))
	}
	tree, err := unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH)
	if err != nil {
		return mountErr("clone read-only file", f, err)
	}
	defer unix.Close(tree)
	if err := setReadOnly(tree, "", true, false); err != nil {
		return err
	}
	if err := unix.MoveMount(tree, "", fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return mountErr("bind read-only file", f, err)
	}
	return nil
}

// openNoSymlinks opens the absolute path with openat2, refusing symlinks
// in every component (the final one included).
func openNoSymlinks(path string, flags int) (int, error) {
	how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC | unix.O_NOFOLLOW), Resolve: unix.RESOLVE_NO_SYMLINKS}
	for i := 0; ; i++ {
		fd, err := unix.Openat2(unix.AT_FDCWD, path, &how)
		if (err != unix.EINTR && err != unix.EAGAIN) || i == 8 {
			return fd, err
		}
	}
}

// isMountRoot reports whether the fd is the root of a mount. Before Linux
// 5.8 statx does not say; known is then false and root too.
func isMountRoot(fd int) (root, known bool, err error) {
	var sx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, 0, &sx); err != nil {
		return false, false, err
	}
	if sx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT == 0 {
		return false, false, nil
	}
	return sx.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0, true, nil
}
