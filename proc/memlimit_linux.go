//go:build linux

package proc

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/codexec/codex/internal/mountinfo"
)

// MemoryLimit returns the memory ceiling. It reads memory.max in the
// cgroup v2 hierarchy and memory.limit_in_bytes in a v1 memory hierarchy
// (hybrid and v1 hosts), from our cgroup up to the root of what is
// mounted; "max" and v1's huge "unlimited" value set nothing. Cgroup files
// it cannot find or read are skipped: physical memory is the fallback.
func MemoryLimit() (MemoryCeiling, error) {
	ram, err := PhysicalMemory()
	if err != nil {
		return MemoryCeiling{}, err
	}
	best := MemoryCeiling{Bytes: ram, Source: "physical memory"}
	for _, h := range []struct{ fstype, ctrl, file string }{
		{"cgroup2", "", "memory.max"},
		{"cgroup", "memory", "memory.limit_in_bytes"},
	} {
		if mnt, dir, err := cgroupDir(h.fstype, h.ctrl); err == nil {
			best = smallestLimit(mnt, dir, h.file, best)
		}
	}
	return best, nil
}

// smallestLimit returns the smallest of best and the limits in file of dir
// and its ancestors up to mnt.
func smallestLimit(mnt, dir, file string, best MemoryCeiling) MemoryCeiling {
	for {
		if n, ok := readLimit(filepath.Join(dir, file)); ok && n < best.Bytes {
			best = MemoryCeiling{Bytes: n, Source: filepath.Join(dir, file)}
		}
		if dir == mnt || len(dir) <= len(mnt) {
			return best
		}
		dir = filepath.Dir(dir)
	}
}

// readLimit reads a memory limit file: a byte count, or "max".
func readLimit(path string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n, err == nil && n > 0
}

// cgroupDir returns the mount point of the hierarchy (cgroup2, or the v1
// one with controller ctrl) and our cgroup's directory under it. The
// mount's root is taken into account: a container may see its own cgroup
// bind-mounted as the hierarchy's top while /proc/self/cgroup names it
// from the host's root.
func cgroupDir(fstype, ctrl string) (mnt, dir string, err error) {
	rel, err := selfCgroupOf(ctrl)
	if err != nil {
		return "", "", err
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		left, right, ok := strings.Cut(sc.Text(), " - ")
		fields, tail := strings.Fields(left), strings.Fields(right)
		if !ok || len(fields) < 5 || len(tail) < 3 || tail[0] != fstype || ctrl != "" && !hasOption(tail[2], ctrl) {
			continue
		}
		root, point := mountinfo.Unescape(fields[3]), mountinfo.Unescape(fields[4])
		sub, ok := strings.CutPrefix(rel, root)
		if !ok || root != "/" && sub != "" && sub[0] != '/' {
			continue
		}
		d := filepath.Join(point, sub)
		if _, err := os.Stat(d); err == nil {
			return point, d, nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", "", err
	}
	return "", "", errors.New("our cgroup is not under a mounted " + fstype + " hierarchy")
}

// selfCgroupOf returns our cgroup path in the v2 hierarchy (ctrl "") or in
// the v1 hierarchy of controller ctrl, from /proc/self/cgroup.
func selfCgroupOf(ctrl string) (string, error) {
	if ctrl == "" {
		return selfCgroup()
	}
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(data), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && hasOption(parts[1], ctrl) {
			return parts[2], nil
		}
	}
	return "", errors.New("no " + ctrl + " line in /proc/self/cgroup")
}
