//go:build linux

package sandbox

import (
	"bufio"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
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
	points, err := cgroupMountPoints()
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

// cgroupMountPoints lists the mount points of cgroup and cgroup2
// filesystems in this mount namespace, de-duplicated.
func cgroupMountPoints() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		left, right, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		fields, fstype := strings.Fields(left), strings.Fields(right)
		if len(fields) < 5 || len(fstype) < 1 || (fstype[0] != "cgroup" && fstype[0] != "cgroup2") {
			continue
		}
		if p := unescapeMountinfo(fields[4]); !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, sc.Err()
}

// unescapeMountinfo undoes the octal escapes (\040 for a space, …) of a
// mountinfo path.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
