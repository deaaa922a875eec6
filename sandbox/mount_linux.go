//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// setupMounts builds the command's view of the filesystem inside the
// helper's private mount namespace (docs/sandbox.md §4.3 steps 1-4 and 6-8). It
// must only ever run in a fresh mount namespace: every change here would
// otherwise hit the host.
//
// The base tree is the host's, made read-only recursively with
// mount_setattr (the copies of the host mounts in our namespace are ours to
// change; binding "/" onto itself would not become the process root without
// a pivot). A restricted-read plan first pivots into a new tmpfs root that
// holds only the readable and writable roots. It returns the placeholders
// it mounted (those need no watching).
func setupMounts(p *Plan) (shadowed map[string]bool, err error) {
	if p.PTSFD > 0 {
		defer unix.Close(p.PTSFD) // mounted by setupDev, or unused: never the command's
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return nil, mountErr("make / private", "/", err)
	}
	if p.RestrictedRead {
		if err := pivotRestrictedRoot(p); err != nil {
			return nil, err
		}
	}
	if p.ReadOnlyRoot || p.RestrictedRead {
		if err := setReadOnly(unix.AT_FDCWD, "/", true, true); err != nil {
			return nil, err
		}
	}
	if shadowed, err = bindWritableRoots(p); err != nil {
		return nil, err
	}
	if err := pinPaths(p); err != nil {
		return nil, err
	}
	if err := bindReadOnlyFiles(p); err != nil {
		return nil, err
	}
	if err := maskDenyPaths(p); err != nil {
		return nil, err
	}
	if err := hideKernelFS(); err != nil {
		return nil, err
	}
	if p.NewPIDNS {
		mountProc() // best effort, as Codex does
	}
	if err := maskProcFiles(); err != nil {
		return nil, err
	}
	if err := protectKernelKnobs(); err != nil {
		return nil, err
	}
	if p.InheritPIDNS {
		if err := protectHostProc(); err != nil {
			return nil, err
		}
	}
	return shadowed, setupDev(p)
}

// bindWritableRoots re-binds each existing writable root read-write,
// shallowest first, each followed by its read-only carve-outs (steps 3-4),
// then shadows the missing protected names with placeholders (step 5).
// Every root and carve-out is opened without following symlinks and
// checked against the identity the server recorded (mount_handles_linux.go),
// and each bind goes from that handle onto that handle: a symlink or a
// rename made after resolution cannot redirect it. A root that is "/"
// needs no bind: clearing the read-only attribute of the top mount is
// enough.
func bindWritableRoots(p *Plan) (map[string]bool, error) {
	roots := slices.Clone(p.WritableRoots)
	slices.SortStableFunc(roots, func(a, b WritableRoot) int { return mountDepth(a.Path) - mountDepth(b.Path) })
	for _, r := range roots {
		if err := bindRoot(p, r); err != nil {
			return nil, err
		}
	}
	return mountPlaceholders(p)
}

// maskDenyPaths hides each existing deny path and match (step 6): a
// directory under an empty read-only tmpfs of mode 000, or 111 when
// writable or readable roots lie below it (those are cloned first and
// re-attached inside the mask); anything else under an empty mode-000
// file. A deny path is masked where its symlinks lead, a deny match where
// it is (a symlink is covered itself). Shallowest first, so a deny path
// inside an earlier mask is already gone. The masks only hold because the
// command has no CAP_DAC_OVERRIDE (caps_linux.go).
func maskDenyPaths(p *Plan) error {
	type mask struct {
		path string
		link bool
	}
	var masks []mask
	for _, d := range p.DenyPaths {
		masks = append(masks, mask{d, false})
	}
	for _, d := range p.DenyMatches {
		masks = append(masks, mask{d, true})
	}
	slices.SortStableFunc(masks, func(a, b mask) int { return mountDepth(a.path) - mountDepth(b.path) })
	var src maskSources
	defer src.close()
	for _, m := range masks {
		stat := os.Stat
		if m.link {
			stat = os.Lstat
		}
		st, err := stat(m.path)
		if err != nil {
			continue // missing: nothing to hide
		}
		keep := keepersBelow(p, m.path)
		if st.IsDir() && len(keep) > 0 {
			err = maskDir(m.path, keep, !m.link)
		} else {
			err = src.attach(m.path, st.IsDir(), !m.link)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// maskSources are the detached mounts that masks are cloned from, made
// on first use: an empty mode-000 read-only tmpfs for directories, and
// one holding an empty mode-000 file for the rest (emptyFileMount). A
// clone is one mount; a new tmpfs per mask would be a superblock each.
type maskSources struct{ dir, file int }

// attach covers target with a clone of the directory or the file source.
func (ms *maskSources) attach(target string, dir, follow bool) error {
	src, name, err := &ms.file, "empty", error(nil)
	if dir {
		src, name = &ms.dir, ""
	}
	if *src <= 0 {
		if dir {
			*src, err = newFS("tmpfs", map[string]string{"mode": "000", "size": "4k"},
				unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC|unix.MOUNT_ATTR_RDONLY)
		} else {
			*src, err = emptyFileMount()
		}
		if err != nil {
			*src = 0
			return mountErr("mask source for", target, err)
		}
	}
	if err := attachClone(*src, name, target, follow); err != nil {
		return mountErr("mask deny path", target, err)
	}
	return nil
}

// close closes the sources (the attached clones stay mounted).
func (ms *maskSources) close() {
	for _, fd := range []int{ms.dir, ms.file} {
		if fd > 0 {
			unix.Close(fd)
		}
	}
}

// keepersBelow lists the writable and readable roots strictly below dir
// that must stay visible through a mask over dir.
func keepersBelow(p *Plan, dir string) []string {
	var out []string
	for _, r := range p.WritableRoots {
		if isStrictlyBelow(r.Path, dir) {
			out = append(out, r.Path)
		}
	}
	for _, r := range p.ReadableRoots {
		if isStrictlyBelow(r, dir) {
			out = append(out, r)
		}
	}
	return out
}

// maskDir covers dir with an empty read-only tmpfs; keep are paths below
// dir whose current mounts are cloned before and re-attached after. With
// follow, a final symlink in dir is followed.
func maskDir(dir string, keep []string, follow bool) error {
	mode := "000"
	if len(keep) > 0 {
		mode = "111" // traverse only, down to the re-attached roots
	}
	saved, err := cloneTrees(keep)
	defer closeClones(saved)
	if err != nil {
		return err
	}
	fd, err := newFS("tmpfs", map[string]string{"mode": mode, "size": "16k"},
		unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return mountErr("tmpfs for deny mask", dir, err)
	}
	defer unix.Close(fd)
	if err := unix.MoveMount(fd, "", unix.AT_FDCWD, dir, moveFlags(follow)); err != nil {
		return mountErr("mask deny path", dir, err)
	}
	if err := attachClones(fd, dir, saved, 0o111); err != nil {
		return err
	}
	return setReadOnly(fd, "", true, false)
}

// clonedTree is a detached clone of the mount tree at path.
type clonedTree struct {
	path string
	fd   int
	dir  bool
}

// cloneTrees clones the mount trees at paths (recursively, with their
// carve-outs), shallowest first.
func cloneTrees(paths []string) ([]clonedTree, error) {
	paths = slices.Clone(paths)
	slices.SortStableFunc(paths, func(a, b string) int { return mountDepth(a) - mountDepth(b) })
	var out []clonedTree
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			continue
		}
		fd, err := unix.OpenTree(unix.AT_FDCWD, p, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
		if err != nil {
			return out, mountErr("clone", p, err)
		}
		out = append(out, clonedTree{path: p, fd: fd, dir: st.IsDir()})
	}
	return out, nil
}

// closeClones closes the clone fds (attached clones stay mounted).
func closeClones(ks []clonedTree) {
	for _, k := range ks {
		unix.Close(k.fd)
	}
}

// attachClones attaches the clones ks inside the mount rootfd, which is now
// mounted at base, creating their mountpoints (intermediate directories
// with dirMode) in it first.
func attachClones(rootfd int, base string, ks []clonedTree, dirMode uint32) error {
	for _, k := range ks {
		rel, err := filepath.Rel(base, k.path)
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			continue
		}
		if err := mkdirAllAt(rootfd, filepath.Dir(rel), dirMode); err != nil {
			return mountErr("mountpoint for", k.path, err)
		}
		if err := makeMountpoint(rootfd, rel, k.dir, dirMode); err != nil {
			return mountErr("mountpoint for", k.path, err)
		}
		if err := unix.MoveMount(k.fd, "", rootfd, rel, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return mountErr("re-attach", k.path, err)
		}
	}
	return nil
}

// emptyFileMount returns a detached read-only tmpfs mount holding one empty
// mode-000 file, "empty", used as the source of file masks.
func emptyFileMount() (int, error) {
	fd, err := newFS("tmpfs", map[string]string{"mode": "000", "size": "4k"},
		unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return -1, mountErr("tmpfs for file masks", "", err)
	}
	if err := makeMountpoint(fd, "empty", false, 0); err != nil {
		unix.Close(fd)
		return -1, mountErr("empty mask file", "", err)
	}
	if err := setReadOnly(fd, "", true, false); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// attachFileMask binds the empty file of the mask mount empty onto target
// (a non-directory), read-only like its source. With follow, a final
// symlink in target is followed; without, the symlink itself is covered.
func attachFileMask(empty int, target string, follow bool) error {
	return attachClone(empty, "empty", target, follow)
}

// attachClone clones name inside the detached mount src ("" for its root)
// onto target.
func attachClone(src int, name, target string, follow bool) error {
	flags := unix.OPEN_TREE_CLONE | unix.OPEN_TREE_CLOEXEC
	if name == "" {
		flags |= unix.AT_EMPTY_PATH
	}
	fd, err := unix.OpenTree(src, name, uint(flags))
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.MoveMount(fd, "", unix.AT_FDCWD, target, moveFlags(follow))
}

// moveFlags are the move_mount flags of a mask from a detached mount onto
// a path, following its final symlink or not.
func moveFlags(follow bool) int {
	if follow {
		return unix.MOVE_MOUNT_F_EMPTY_PATH | unix.MOVE_MOUNT_T_SYMLINKS
	}
	return unix.MOVE_MOUNT_F_EMPTY_PATH
}

// newFS creates a detached mount of a fresh filesystem of type fstype with
// the given string options and mount attributes (fsopen/fsmount).
func newFS(fstype string, opts map[string]string, attrs int) (int, error) {
	fsfd, err := unix.Fsopen(fstype, unix.FSOPEN_CLOEXEC)
	if err != nil {
		return -1, os.NewSyscallError("fsopen "+fstype, err)
	}
	defer unix.Close(fsfd)
	for k, v := range opts {
		if v == "" {
			err = unix.FsconfigSetFlag(fsfd, k)
		} else {
			err = unix.FsconfigSetString(fsfd, k, v)
		}
		if err != nil {
			return -1, os.NewSyscallError("fsconfig "+fstype+" "+k, err)
		}
	}
	if err := unix.FsconfigCreate(fsfd); err != nil {
		return -1, os.NewSyscallError("fsconfig create "+fstype, err)
	}
	fd, err := unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC, attrs)
	if err != nil {
		return -1, os.NewSyscallError("fsmount "+fstype, err)
	}
	return fd, nil
}

// setReadOnly sets (ro) or clears the read-only attribute of the mount at
// (dirfd, path), of the whole tree below it when recursive. An empty path
// means dirfd itself.
func setReadOnly(dirfd int, path string, ro, recursive bool) error {
	attr := unix.MountAttr{}
	if ro {
		attr.Attr_set = unix.MOUNT_ATTR_RDONLY
	} else {
		attr.Attr_clr = unix.MOUNT_ATTR_RDONLY
	}
	var flags uint
	if recursive {
		flags |= unix.AT_RECURSIVE
	}
	if path == "" {
		flags |= unix.AT_EMPTY_PATH
	}
	if err := unix.MountSetattr(dirfd, path, flags, &attr); err != nil {
		what := "remount read-only"
		if !ro {
			what = "remount read-write"
		}
		return mountErr(what, path, err)
	}
	return nil
}

// mkdirAllAt creates rel (and its parents) below dirfd with mode, never
// following a symlink. Existing directories are clonedTree as they are.
func mkdirAllAt(dirfd int, rel string, mode uint32) error {
	if rel == "." || rel == "" || rel == "/" {
		return nil
	}
	if err := mkdirAllAt(dirfd, filepath.Dir(rel), mode); err != nil {
		return err
	}
	return makeMountpoint(dirfd, rel, true, mode)
}

// makeMountpoint creates rel below dirfd as a directory (dir) or an empty
// file, with mode, unless something is already there. The mode is set
// explicitly, as the umask would otherwise narrow it.
func makeMountpoint(dirfd int, rel string, dir bool, mode uint32) error {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, rel, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
		return nil
	}
	if dir {
		if err := unix.Mkdirat(dirfd, rel, mode); err != nil && err != unix.EEXIST {
			return err
		}
	} else {
		fd, err := unix.Openat(dirfd, rel, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, mode)
		if err != nil {
			return err
		}
		unix.Close(fd)
	}
	return unix.Fchmodat(dirfd, rel, mode, 0)
}

// mountDepth is the number of components of an absolute path ("/" is 0).
func mountDepth(p string) int {
	p = filepath.Clean(p)
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}

// isStrictlyBelow reports whether p lies below dir (component-wise).
func isStrictlyBelow(p, dir string) bool {
	p, dir = filepath.Clean(p), filepath.Clean(dir)
	if dir == "/" {
		return p != "/"
	}
	return strings.HasPrefix(p, dir+"/")
}

// pathExists reports whether p exists (following symlinks).
func pathExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// mountErr wraps a mount-layer failure, keeping the errno for errors.Is.
func mountErr(what, path string, err error) error {
	if path == "" {
		return fmt.Errorf("mount: %s: %w", what, err)
	}
	return fmt.Errorf("mount: %s %s: %w", what, path, err)
}
