//go:build linux

package proc

import (
	"path/filepath"

	"go.uber.org/zap"
)

// NewSubreaperTreeKiller returns a TreeKiller forced into subreaper mode,
// so tests can cover the fallback on a host where cgroup v2 works.
func NewSubreaperTreeKiller(logger *zap.Logger) (*TreeKiller, error) {
	return newTreeKiller(logger, false, Limits{})
}

// CgroupLeaf returns the cgroup leaf of p ("" outside cgroup mode).
func CgroupLeaf(p *Process) string { return p.leaf }

// CgroupDir returns the directory t owns in cgroup mode.
func CgroupDir(t *TreeKiller) string { return t.dir }

// SpareLeaf waits until no refill of t's spare leaf runs and returns the
// spare's directory ("" if there is none). Call it with no spawn under way.
func SpareLeaf(t *TreeKiller) string {
	t.spare.wg.Wait()
	t.spare.mu.Lock()
	defer t.spare.mu.Unlock()
	if t.spare.slot == nil {
		return ""
	}
	return t.spare.slot.dir
}

// PidsLeaf returns the directory that carries pids.max for the leaf dir:
// its cgroup v1 pids twin on hybrid hosts, else dir itself.
func PidsLeaf(t *TreeKiller, dir string) string {
	if t.v1 != nil {
		return filepath.Join(t.v1.dir, filepath.Base(dir))
	}
	return dir
}

// ArmTreeKillBackstop arms the leaf kill that follows a group kill sent
// before the reap (deferTreeKill), without sending the group kill: a root
// that the group kill did not end, as one stuck in an uninterruptible
// sleep would be.
func ArmTreeKillBackstop(p *Process) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.deferTreeKill()
}

// TreeKillBackstop is how long a group kill before the reap waits for the
// reap before it kills the leaf.
const TreeKillBackstop = treeKillBackstop

// SetForkerMinFD sets the lowest inherited fd number that forks on t's
// forker (0: every fork). Call it before t forks.
func SetForkerMinFD(t *TreeKiller, n uintptr) { t.forker.minFD = n }

// ForkerTID returns the id of t's forker thread, 0 if none runs.
func ForkerTID(t *TreeKiller) int {
	t.forker.mu.Lock()
	defer t.forker.mu.Unlock()
	if t.forker.f == nil || t.forker.closed {
		return 0
	}
	return t.forker.f.tid
}

// HoldForker keeps t's forker (started if need be) busy, as a start whose
// exec hangs would, until release is called.
func HoldForker(t *TreeKiller) (release func(), err error) {
	if t.forker.f == nil {
		f, err := startForker(-1)
		if err != nil {
			return nil, err
		}
		t.forker.f = f
	}
	t.forker.f.mu.Lock()
	return t.forker.f.mu.Unlock, nil
}
