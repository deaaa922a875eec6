//go:build linux

package sandbox

import (
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

// setupDev replaces /dev with a minimal read-only tmpfs (step 8): the
// nodes of devNodes, a new devpts instance with ptmx, a private /dev/shm
// (or the host's, when it is a writable root) and the usual symlinks. The
// PTY slave that the server put on fds 0-2 stays usable: it is already open.
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
	hostPTY, _ := cloneTrees([]string{"/dev/pts", "/dev/ptmx"}) // fallback only
	defer func() { closeClones(hostPTY) }()

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
	if err := devPTS(dev, hostPTY); err != nil {
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

// devPTS mounts a new devpts instance on /dev/pts, so the command can open
// new PTYs without seeing the host's. If the kernel refuses, it binds the
// host's /dev/pts and /dev/ptmx instead.
func devPTS(dev int, host []clonedTree) error {
	if err := mkdirAllAt(dev, "pts", 0o755); err != nil {
		return mountErr("mountpoint for", "/dev/pts", err)
	}
	pts, err := newFS("devpts", map[string]string{"ptmxmode": "0666", "mode": "0620"},
		unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC)
	if err == nil {
		defer unix.Close(pts)
		if err := unix.MoveMount(pts, "", dev, "pts", unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return mountErr("mount", "/dev/pts", err)
		}
		return nil
	}
	if len(host) != 2 {
		return mountErr("devpts for", "/dev/pts", err)
	}
	if err := unix.Unlinkat(dev, "ptmx", 0); err != nil {
		return mountErr("unlink", "/dev/ptmx", err)
	}
	return attachClones(dev, "/dev", host, 0o755)
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
