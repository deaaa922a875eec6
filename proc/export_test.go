//go:build linux

package proc

import "go.uber.org/zap"

// NewSubreaperTreeKiller returns a TreeKiller forced into subreaper mode,
// so tests can cover the fallback on a host where cgroup v2 works.
func NewSubreaperTreeKiller(logger *zap.Logger) (*TreeKiller, error) {
	return newTreeKiller(logger, false, Limits{})
}

// CgroupLeaf returns the cgroup leaf of p ("" outside cgroup mode).
func CgroupLeaf(p *Process) string { return p.leaf }

// CgroupDir returns the directory t owns in cgroup mode.
func CgroupDir(t *TreeKiller) string { return t.dir }
