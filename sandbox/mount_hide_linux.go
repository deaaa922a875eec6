//go:build linux

package sandbox

import (
	"slices"

	"golang.org/x/sys/unix"

	"github.com/codexec/codex/internal/mountinfo"
)

// kernelFSTypes are the filesystems, besides cgroupfs, through which the
// kernel shows its state and takes settings. The command's own /proc, /sys
// and /dev are dealt with by mountProc, protectKernelKnobs and setupDev; a
// mount of one of these types anywhere else (a build chroot's /proc, a
// container host's /host/sys, a second devtmpfs) would hand a uid-0
// command the very knobs those protect: core_pattern, uevent_helper, the
// host's block devices.
var kernelFSTypes = []string{
	"proc", "sysfs", "devtmpfs", "debugfs", "tracefs", "securityfs", "configfs", "efivarfs",
	"pstore", "bpf", "binfmt_misc", "fusectl", "nfsd", "rpc_pipefs", "mqueue",
}

// ownKernelTrees are the places where the command gets a kernel view of
// its own (a fresh /proc, a read-only /sys, a new /dev): hideKernelFS
// leaves what is mounted there (but not the cgroup filesystems) to the
// later steps.
var ownKernelTrees = []string{"/proc", "/sys", "/dev"}

// hideKernelFS covers every cgroup filesystem of the command's view, and
// every other kernel filesystem outside ownKernelTrees, with an empty
// read-only tmpfs (an empty mode-000 file for one mounted on a file).
//
// The command runs as uid 0, the owner of every cgroup.procs: with a
// cgroup2 directory fd it could start a child in any cgroup (clone3 with
// CLONE_INTO_CGROUP ignores the read-only mount and Landlock) and so leave
// its leaf, and with it its pids/memory limits, its unix-send filter and
// the server's peer check. seccomp answers clone3 with ENOSYS and the
// cgroup namespace refuses moves out of the leaf as well; this takes away
// the directory itself. Tools that read their CPU or memory limit from
// cgroupfs fall back to the host's.
func hideKernelFS() error {
	cgroups, err := mountinfo.CgroupMountPoints()
	if err != nil {
		return mountErr("reading mountinfo", "", err)
	}
	others, err := mountinfo.MountPoints(kernelFSTypes...)
	if err != nil {
		return mountErr("reading mountinfo", "", err)
	}
	points := slices.Clone(cgroups)
	for _, p := range others {
		own := slices.ContainsFunc(ownKernelTrees, func(t string) bool { return p == t || isStrictlyBelow(p, t) })
		if !own && !slices.Contains(points, p) {
			points = append(points, p)
		}
	}
	// Deepest first: a mask over a parent would hide the ones below it.
	slices.SortStableFunc(points, func(a, b string) int { return mountDepth(b) - mountDepth(a) })
	empty := -1
	defer func() {
		if empty >= 0 {
			unix.Close(empty)
		}
	}()
	for _, p := range points {
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			continue // gone, or below an earlier mask: nothing to hide
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			if empty < 0 {
				if empty, err = emptyFileMount(); err != nil {
					return err
				}
			}
			if err := attachFileMask(empty, p, false); err != nil {
				return mountErr("hide kernel file", p, err)
			}
			continue
		}
		if err := hideDir(p); err != nil {
			return err
		}
	}
	return nil
}

// hideDir mounts an empty read-only tmpfs of mode 555 on dir.
func hideDir(dir string) error {
	fd, err := newFS("tmpfs", map[string]string{"mode": "555", "size": "4k"},
		unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC|unix.MOUNT_ATTR_RDONLY)
	if err != nil {
		return mountErr("tmpfs over kernel filesystem", dir, err)
	}
	err = unix.MoveMount(fd, "", unix.AT_FDCWD, dir, unix.MOVE_MOUNT_F_EMPTY_PATH)
	unix.Close(fd)
	if err != nil && err != unix.ENOENT {
		return mountErr("hide kernel filesystem", dir, err)
	}
	return nil
}
