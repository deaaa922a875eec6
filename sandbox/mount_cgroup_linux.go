//go:build linux

package sandbox

import (
	"slices"

	"golang.org/x/sys/unix"

	"github.com/codexec/codex/internal/mountinfo"
)

// hideCgroupFS covers every cgroup filesystem of the command's view with an
// empty read-only tmpfs. The command runs as uid 0, the owner of every
// cgroup.procs: with a cgroup2 directory fd it could start a child in any
// cgroup (clone3 with CLONE_INTO_CGROUP ignores the read-only mount and
// Landlock) and so leave its leaf, and with it its pids/memory limits, its
// unix-send filter and the server's peer check. seccomp answers clone3
// with ENOSYS as well; this takes away the directory itself. Tools that
// read their CPU or memory limit from cgroupfs fall back to the host's.
func hideCgroupFS() error {
	points, err := mountinfo.CgroupMountPoints()
	if err != nil {
		return mountErr("reading mountinfo", "", err)
	}
	// Deepest first: a mask over a parent would hide the ones below it.
	slices.SortStableFunc(points, func(a, b string) int { return mountDepth(b) - mountDepth(a) })
	for _, p := range points {
		fd, err := newFS("tmpfs", map[string]string{"mode": "555", "size": "4k"},
			unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC|unix.MOUNT_ATTR_RDONLY)
		if err != nil {
			return mountErr("tmpfs over cgroupfs", p, err)
		}
		err = unix.MoveMount(fd, "", unix.AT_FDCWD, p, unix.MOVE_MOUNT_F_EMPTY_PATH)
		unix.Close(fd)
		if err != nil && err != unix.ENOENT {
			return mountErr("hide cgroupfs", p, err)
		}
	}
	return nil
}
