//go:build linux

// Package mountinfo reads this process's mount table: where the cgroup
// (and other kernel) filesystems are mounted. It is shared by the server
// (its cgroup leaves), the sandbox helper (which hides them) and
// `codex sandbox`.
package mountinfo

import (
	"bufio"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
)

// ErrNoCgroup2 is returned by Cgroup2Mount when no cgroup v2 hierarchy is
// mounted.
var ErrNoCgroup2 = errors.New("no cgroup2 mount in /proc/self/mounts")

// Cgroup2Mount returns the first mount point of the cgroup v2 hierarchy. On
// hybrid hosts it is not /sys/fs/cgroup but e.g. /sys/fs/cgroup/unified.
func Cgroup2Mount() (string, error) {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 3 && fields[2] == "cgroup2" {
			return Unescape(fields[1]), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", ErrNoCgroup2
}

// CgroupMountPoints lists the mount points of every cgroup and cgroup2
// filesystem in this mount namespace, de-duplicated, in table order.
func CgroupMountPoints() ([]string, error) { return MountPoints("cgroup", "cgroup2") }

// MountPoints lists the mount points of every filesystem of one of the
// types given in this mount namespace, de-duplicated, in table order.
func MountPoints(types ...string) ([]string, error) {
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
		if len(fields) < 5 || len(fstype) < 1 || !slices.Contains(types, fstype[0]) {
			continue
		}
		if p := Unescape(fields[4]); !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, sc.Err()
}

// Unescape undoes the octal escapes (\040 for a space, …) of a path in
// /proc/self/mounts or mountinfo.
func Unescape(s string) string {
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
