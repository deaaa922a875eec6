//go:build linux

package sandbox

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// devNodes are the character devices of the minimal /dev. They are bound
// from the host's /dev (a user namespace cannot mknod), like bubblewrap's
// --dev does.
var devNodes = [...]string{"null", "zero", "full", "random", "urandom", "tty"}

// devLinks are the symlinks of the minimal /dev.
var devLinks = [...][2]string{
	{"fd", "/proc/self/fd"},
	{"stdin", "/proc/self/fd/0"},
	{"stdout", "/proc/self/fd/1"},
	{"stderr", "/proc/self/fd/2"},
	{"ptmx", "pts/ptmx"},
}

// mountProc mounts a fresh procfs for the new PID namespace (step 7). A
// failure leaves the previous /proc in place, silently, as Codex does.
func mountProc() {
	_ = unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
}

// hiddenProcFiles list the host's kernel keys by description (keys of the
// server's uid, whatever the keyring syscalls that seccomp denies).
var hiddenProcFiles = [...]string{"/proc/keys", "/proc/key-users"}

// maskProcFiles covers hiddenProcFiles, in whichever /proc the command
// sees, with the empty mode-000 file of the deny masks. A /proc without
// them (an older kernel, no CONFIG_KEYS) needs nothing.
func maskProcFiles() error {
	var empty = -1
	defer func() {
		if empty >= 0 {
			unix.Close(empty)
		}
	}()
	for _, f := range hiddenProcFiles {
		var st unix.Stat_t
		if unix.Lstat(f, &st) != nil {
			continue
		}
		if empty < 0 {
			var err error
			if empty, err = emptyFileMount(); err != nil {
				return err
			}
		}
		if err := attachFileMask(empty, f, true); err != nil {
			return mountErr("mask", f, err)
		}
	}
	return nil
}

// setupDev replaces /dev with a minimal read-only tmpfs (step 8): the
// nodes of devNodes, a devpts instance of the command's own with ptmx, a
// private /dev/shm (or the host's, when it is a writable root) and the
// usual symlinks. The devpts instance is the one holding the command's
// terminal when the spawner opened it there (Plan.PTSFD), else a new one;
// the host's instance, with every other terminal on the host, is never
// reachable.
func setupDev(p *Plan) error {
	if !pathExists("/dev") {
		return nil
	}
	var nodes []clonedTree
	defer func() { closeClones(nodes) }()
	for _, n := range devNodes {
		fd, err := unix.OpenTree(unix.AT_FDCWD, "/dev/"+n, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
		if err == nil {
			nodes = append(nodes, clonedTree{path: "/dev/" + n, fd: fd})
		}
	}
	saved, err := cloneTrees(keepersBelow(p, "/dev"))
	defer func() { closeClones(saved) }()
	if err != nil {
		return err
	}

	dev, err := newFS("tmpfs", map[string]string{"mode": "0755", "size": "64k"},
		unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return mountErr("tmpfs for", "/dev", err)
	}
	defer unix.Close(dev)
	if err := unix.MoveMount(dev, "", unix.AT_FDCWD, "/dev", unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return mountErr("mount", "/dev", err)
	}
	if err := attachClones(dev, "/dev", nodes, 0o755); err != nil {
		return err
	}
	for _, l := range devLinks {
		if err := unix.Symlinkat(l[1], dev, l[0]); err != nil {
			return mountErr("symlink", "/dev/"+l[0], err)
		}
	}
	if err := devPTS(dev, p.PTSFD); err != nil {
		return err
	}
	if !hasClone(saved, "/dev/shm") {
		if err := devShm(dev); err != nil {
			return err
		}
	}
	if err := attachClones(dev, "/dev", saved, 0o755); err != nil {
		return err
	}
	return setReadOnly(dev, "", true, false)
}

// devPTS mounts a devpts instance on /dev/pts: the detached mount on the
// fd given (it must be the root of a devpts mount), or a new instance when
// given 0. If the kernel refuses a new instance, /dev/pts stays empty (the
// command cannot open new PTYs): binding the host's instance instead
// would hand it every terminal on the host.
func devPTS(dev, given int) error {
	if err := mkdirAllAt(dev, "pts", 0o755); err != nil {
		return mountErr("mountpoint for", "/dev/pts", err)
	}
	pts := given
	if given > 0 {
		if err := checkDevpts(given); err != nil {
			return mountErr("devpts of the terminal", "/dev/pts", err)
		}
	} else {
		var err error
		if pts, err = newFS("devpts", devptsOptions, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC); err != nil {
			return nil
		}
		defer unix.Close(pts)
	}
	if err := unix.MoveMount(pts, "", dev, "pts", unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return mountErr("mount", "/dev/pts", err)
	}
	return nil
}

// checkDevpts fails unless fd is the root of a devpts mount.
func checkDevpts(fd int) error {
	var fs unix.Statfs_t
	if err := unix.Fstatfs(fd, &fs); err != nil {
		return err
	}
	if fs.Type != unix.DEVPTS_SUPER_MAGIC {
		return fmt.Errorf("fd %d is not a devpts mount (type %#x)", fd, fs.Type)
	}
	if root, known, err := isMountRoot(fd); err != nil || (known && !root) {
		return fmt.Errorf("fd %d is not the root of a mount (%v)", fd, err)
	}
	return nil
}

// devShm mounts a private tmpfs on /dev/shm.
func devShm(dev int) error {
	if err := mkdirAllAt(dev, "shm", 0o755); err != nil {
		return mountErr("mountpoint for", "/dev/shm", err)
	}
	shm, err := newFS("tmpfs", map[string]string{"mode": "1777"},
		unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
	if err != nil {
		return mountErr("tmpfs for", "/dev/shm", err)
	}
	defer unix.Close(shm)
	if err := unix.MoveMount(shm, "", dev, "shm", unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return mountErr("mount", "/dev/shm", err)
	}
	return nil
}

// hasClone reports whether ks holds a clone of path.
func hasClone(ks []clonedTree, path string) bool {
	for _, k := range ks {
		if k.path == path {
			return true
		}
	}
	return false
}
