//go:build linux

package proc

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// leafLimit is one control file written into every leaf.
type leafLimit struct {
	file, value string
}

// setupLimits enables the pids and memory controllers for the leaves under
// t.dir (in base's and t.dir's cgroup.subtree_control) and records the
// files prepare writes. A controller that cannot be enabled (not in this
// hierarchy, or base holds processes of its own and is not the root) is
// logged once here and left out.
func (t *TreeKiller) setupLimits(base string, lim Limits) {
	type want struct {
		ctrl, file string
		n          int64
	}
	for _, w := range []want{{"pids", "pids.max", lim.MaxPids}, {"memory", "memory.max", lim.MaxMemory}} {
		if w.n <= 0 {
			continue
		}
		if err := enableController(base, t.dir, w.ctrl); err != nil {
			t.log.Debug("per-process limit unavailable in cgroup v2", zap.String("controller", w.ctrl), zap.Error(err))
			if w.ctrl == "pids" {
				t.setupPidsV1(lim.MaxPids)
			}
			continue
		}
		t.limits = append(t.limits, leafLimit{w.file, strconv.FormatInt(w.n, 10)})
	}
}

// enableController makes ctrl available in the children of dir, a child
// of base.
func enableController(base, dir, ctrl string) error {
	avail, err := os.ReadFile(filepath.Join(base, "cgroup.controllers"))
	if err != nil {
		return err
	}
	if !slices.Contains(strings.Fields(string(avail)), ctrl) {
		return &os.PathError{Op: "enable " + ctrl, Path: base, Err: unix.ENODEV}
	}
	on, err := os.ReadFile(filepath.Join(base, "cgroup.subtree_control"))
	if err != nil {
		return err
	}
	if !slices.Contains(strings.Fields(string(on)), ctrl) {
		if err := writeFile(filepath.Join(base, "cgroup.subtree_control"), "+"+ctrl); err != nil {
			return err
		}
	}
	return writeFile(filepath.Join(dir, "cgroup.subtree_control"), "+"+ctrl)
}

// applyLimits writes the limits into a new leaf. A failure is logged once
// and the process runs without that limit.
func (t *TreeKiller) applyLimits(leaf string) {
	for _, l := range t.limits {
		if err := writeFile(filepath.Join(leaf, l.file), l.value); err != nil {
			t.limitWarn.Do(func() {
				t.log.Warn("cannot set a per-process limit; continuing without it", zap.String("file", l.file), zap.Error(err))
			})
		}
	}
}

// PhysicalMemory returns the total RAM of the host in bytes.
func PhysicalMemory() (int64, error) {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return 0, os.NewSyscallError("sysinfo", err)
	}
	return int64(si.Totalram) * int64(si.Unit), nil
}
