//go:build linux

// TreeKiller: construction, mode choice (cgroup or subreaper), Close, and
// the kill entry point. Each mode lives in its own file.

package proc

import (
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// Tree-killing modes, as reported by TreeKiller.Mode.
const (
	modeCgroup    = "cgroup"
	modeSubreaper = "subreaper"
)

const (
	releaseWait   = 500 * time.Millisecond // how long Close retries a busy leaf after a kill
	maxWalkPasses = 64                     // bound on /proc walks per kill (fork bombs)
)

// TreeKiller kills whole process trees, including descendants that called
// setsid and so escaped their process group (docs/protocol.md §7.8 [ext]).
//
// In cgroup mode every process starts directly inside its own cgroup v2
// leaf (CLONE_INTO_CGROUP) under a directory the TreeKiller owns, and a kill
// writes cgroup.kill (or, before Linux 5.14, freezes the leaf and SIGKILLs
// its pids). This is exact: nothing can leave the leaf without privileges.
//
// In subreaper mode (no writable cgroup2) the server becomes a child
// subreaper, so orphans re-parent to it instead of init. A kill SIGSTOPs and
// then SIGKILLs every process reachable from the child by parent links, or
// sharing its session or group, repeating the /proc walk until it finds
// nothing new; a reaper goroutine reaps the orphans that exit. An escapee
// whose parents have all exited cannot be attributed to its process any
// more: it is killed by TreeKiller.Close. The reaper reaps only zombie
// children that are not tracked, not owned by other server code (which
// forks through package reap: reap.StartCmd) and not in the server's own
// session, so it never steals the status of a Process or of a helper.
//
// Create one TreeKiller per server, pass it in Options.Tree, and Close it
// after every Process was closed. Its methods are safe for concurrent use.
type TreeKiller struct {
	log  *zap.Logger
	mode string // modeCgroup or modeSubreaper; immutable

	// cgroup mode, immutable after construction.
	dir     string        // owned directory <mount><our cgroup>/codex-exec-<pid>
	lockFD  int           // holds an flock on dir while we live (sweepStaleCgroups); -1: none
	hasKill bool          // cgroup.kill exists (Linux >= 5.14)
	seq     atomic.Uint64 // names the leaves
	spare   spareLeaf     // the leaf of the next spawn, made ahead

	launchers []string // argv[0] names of confining programs; immutable

	// subreaper mode, immutable after construction.
	selfPid, selfSid int
	prevSubreaper    int32
	sigs             chan os.Signal // SIGCHLD; buffered
	kick             chan struct{}  // asks the reaper to run; buffered
	done             chan struct{}  // closed by Close: stops the reaper
	wg               sync.WaitGroup // the reaper goroutine
	resumeReapers    func()         // ends reap.StandAside

	mu      sync.Mutex          // guards the fields below; in subreaper mode held across every fork
	tracked map[int]struct{}    // subreaper: unreaped children owned by a Process
	adopted map[int]bool        // subreaper: live orphans the watchdog was told of
	pending map[string]struct{} // cgroup: leaves still busy after their Process ended
	sb      sandboxState        // what the peer check knows of sandboxed processes

	cgNames cgroupNames   // the peer check's cgroup paths by id; own lock
	holders recentHolders // where the peer check looks first; own lock
	clean   cleanLineage  // processes whose ancestry holds no sandbox; own lock

	// per-process limits (cgroup mode), immutable after construction.
	limits    []leafLimit // control files written into each leaf
	v1        *pidsV1     // cgroup v1 pids fallback; nil without
	limitWarn sync.Once   // logs the first failure to apply a limit

	forker forkerSlot // forks on a thread with a small fd table; own lock

	closeOnce sync.Once
	closeErr  error
}

// NewTreeKiller returns a TreeKiller in cgroup mode if a writable cgroup v2
// hierarchy and Linux >= 5.7 are available, else in subreaper mode. It
// never fails because a mode is unavailable; the reason for a fallback is
// logged at info level. A nil logger means no logging.
func NewTreeKiller(logger *zap.Logger) (*TreeKiller, error) {
	return newTreeKiller(logger, true, Limits{})
}

// NewLimitedTreeKiller is NewTreeKiller with per-process limits, applied
// to each cgroup leaf where the controllers are available (logged once
// where not). Subreaper mode applies none. launchers are the argv[0] names
// of the programs that confine what they run (the sandbox helper's, which
// execserver passes): the peer check (CheckPeer) takes any process below
// one, ours or not, for a confined one.
func NewLimitedTreeKiller(logger *zap.Logger, lim Limits, launchers ...string) (*TreeKiller, error) {
	t, err := newTreeKiller(logger, true, lim)
	if t != nil {
		t.launchers = launchers
	}
	return t, err
}

func newTreeKiller(logger *zap.Logger, tryCgroup bool, lim Limits) (*TreeKiller, error) {
	if logger == nil {
		logger = zap.NewNop()
	}
	t := &TreeKiller{log: logger, forker: forkerSlot{minFD: forkerMinFD}}
	if tryCgroup {
		err := t.setupCgroup(lim)
		if err == nil {
			t.mode = modeCgroup
			logger.Debug("tree killer: cgroup mode", zap.String("dir", t.dir))
			return t, nil
		}
		logger.Info("tree killer: cgroup v2 unusable; using subreaper mode", zap.Error(err))
	}
	t.setupSubreaper()
	return t, nil
}

// Mode returns "cgroup" or "subreaper".
func (t *TreeKiller) Mode() string { return t.mode }

// Close kills every process still in the TreeKiller's cgroups (in subreaper
// mode: every orphan that re-parented to the server, and its descendants)
// and removes the owned directory, or stops the reaper and restores the
// subreaper flag. Call it after every Process was closed. Idempotent.
func (t *TreeKiller) Close() error {
	t.closeOnce.Do(func() {
		if t.mode == modeCgroup {
			t.closeSpare()
			t.closeErr = t.closeCgroup()
		} else {
			t.closeSubreaper()
		}
		t.closeForker() // after the kills: its children get their parent-death signal
	})
	return t.closeErr
}

// kill SIGKILLs the tree of the process pid: its cgroup leaf, or in
// subreaper mode everything the /proc walk attributes to it. rootAlive says
// that pid is not reaped yet (the caller holds Process.mu).
func (t *TreeKiller) kill(pid int, leaf string, rootAlive bool) error {
	if t.mode == modeCgroup {
		if leaf == "" {
			return nil
		}
		return t.killCgroup(leaf)
	}
	var roots []int
	sid := pid // the child called setsid: sid = pgid = pid
	if rootAlive {
		roots = []int{pid}
	} else if !groupOnlyOurs(pid) {
		sid = 0
	}
	t.killWalk(roots, sid)
	t.kickReaper()
	return nil
}

// treeKillBackstop bounds how long a kill before the reap leaves the rest
// of the leaf alive while the child does not die (settleTree): a child
// stuck in an uninterruptible sleep must not shelter a descendant that
// called setsid.
const treeKillBackstop = time.Second

// defersLeafKill reports whether a kill of a process not yet reaped may
// signal its group first and leave the leaf to settleTree: in cgroup mode
// with cgroup.kill, for a process that has a leaf.
func (t *TreeKiller) defersLeafKill(leaf string) bool {
	return t.mode == modeCgroup && t.hasKill && leaf != ""
}

// deferTreeKill arms the settling of the leaf after a kill that signalled
// the process group only. Called with p.mu held, before the reap.
func (p *Process) deferTreeKill() {
	if p.treeKill != nil {
		return
	}
	p.wg.Add(1)
	p.treeKill = time.AfterFunc(treeKillBackstop, func() {
		defer p.wg.Done()
		p.settleTree(false)
	})
}

// settleTree finishes a kill that signalled the process group only
// (deferTreeKill), once: at the reap (reaped) it removes the leaf if the
// group kill emptied it, which is the usual case and spares the
// cgroup.kill write; a leaf still populated (a descendant that called
// setsid or left the group) is killed whole. The backstop timer kills the
// leaf without looking, unless the child died and only its reap is late
// (many processes ending at once on a loaded host): the reap settles it.
func (p *Process) settleTree(reaped bool) {
	p.mu.Lock()
	t := p.treeKill
	if t == nil || p.leafGone || !reaped && (p.reaped || p.childDead()) {
		p.mu.Unlock()
		return
	}
	p.treeKill = nil
	stopped := reaped && t.Stop()
	p.mu.Unlock()
	if stopped {
		p.wg.Done() // the backstop will never run
	}
	if reaped && p.tree.release(p.leaf, false) {
		p.mu.Lock()
		p.leafGone = true
		p.mu.Unlock()
		return
	}
	if err := p.tree.killCgroup(p.leaf); err != nil {
		p.log.Debug("kill", zap.Error(err))
	}
}

// childDead reports whether the child exited and waits to be reaped.
// Called with p.mu held before the reap, so the pid is still the child's.
func (p *Process) childDead() bool {
	var si siginfo
	err := waitid(unix.P_PID, p.pid, &si, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT)
	return err == nil && si.pid != 0
}
