//go:build linux

// Subreaper mode, the fallback without a usable cgroup: we become the
// child subreaper, track our children, reap orphans, and kill a tree by
// walking /proc.

package proc

import (
	"os"
	ossignal "os/signal"
	"slices"
	"time"
	"unsafe"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/codexec/codex/internal/reap"
)

// setupSubreaper makes the server a child subreaper and starts the reaper.
func (t *TreeKiller) setupSubreaper() {
	t.mode = modeSubreaper
	t.selfPid = os.Getpid()
	t.selfSid, _ = unix.Getsid(0)
	_ = unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&t.prevSubreaper)), 0, 0, 0)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.log.Warn("PR_SET_CHILD_SUBREAPER; escaped orphans will re-parent to init", zap.Error(err))
	}
	t.tracked = make(map[int]struct{})
	t.adopted = make(map[int]bool)
	// Our reaper keeps books on the orphans it adopts (the watchdog is
	// told of them): the server's reaper of unowned children leaves our
	// children to it.
	t.resumeReapers = reap.StandAside()
	t.sigs = make(chan os.Signal, 1)
	t.kick = make(chan struct{}, 1)
	t.done = make(chan struct{})
	ossignal.Notify(t.sigs, unix.SIGCHLD)
	t.wg.Add(1)
	go t.reapLoop()
}

// closeSubreaper stops the reaper, kills and reaps the remaining orphans,
// and restores the subreaper flag.
func (t *TreeKiller) closeSubreaper() {
	ossignal.Stop(t.sigs)
	close(t.done)
	t.wg.Wait()
	if alive := t.orphans(); len(alive) > 0 {
		t.killWalk(alive, 0)
	}
	deadline := time.Now().Add(releaseWait)
	for t.reapOrphans() > 0 && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
	if t.prevSubreaper == 0 {
		_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	}
	t.resumeReapers()
}

// lockSpawn excludes the orphan reaper from a fork until its pid is
// tracked; without that, a child that exits at once could be reaped as an
// orphan. It returns the unlock function.
func (t *TreeKiller) lockSpawn() func() {
	if t == nil || t.mode != modeSubreaper {
		return func() {}
	}
	t.mu.Lock()
	return t.mu.Unlock
}

// track records a new child. Called between lockSpawn and its unlock.
func (t *TreeKiller) track(pid int) {
	if t != nil && t.mode == modeSubreaper {
		t.tracked[pid] = struct{}{}
	}
}

// watchChild tells the watchdog of a child just started (subreaper
// mode): pidfd is its pidfd (-1: none), master its terminal's master
// side (-1: none), which the watchdog keeps open so that the terminal
// does not hang up, and the session leader's death orphan its jobs,
// before the watchdog's walk has found them.
func (t *TreeKiller) watchChild(pid, pidfd, master int) {
	if w := watchdog.Load(); w != nil && t.watched() {
		w.watchChild(pid, pidfd, master)
	}
}

// watched reports whether a watchdog kills the trees of t's children if
// the server dies (subreaper mode; cgroup mode needs no telling): they
// then need no parent-death signal, which would orphan their own
// children before the watchdog's walk could find them.
func (t *TreeKiller) watched() bool {
	return t != nil && t.mode == modeSubreaper && watchdog.Load() != nil
}

// untrack forgets a reaped child; its orphans are now the reaper's.
func (t *TreeKiller) untrack(pid int) {
	t.mu.Lock()
	t.untrackSandboxed(pid)
	t.mu.Unlock()
	if t.mode != modeSubreaper {
		return
	}
	t.mu.Lock()
	delete(t.tracked, pid)
	t.mu.Unlock()
	if w := watchdog.Load(); w != nil {
		w.forgetChild(pid)
	}
	t.kickReaper()
}

// kickReaper asks the reaper goroutine for a pass without blocking.
func (t *TreeKiller) kickReaper() {
	select {
	case t.kick <- struct{}{}:
	default:
	}
}

// reapBusyRetry is how soon the reaper tries again after a fork under way
// put its pass off.
const reapBusyRetry = 10 * time.Millisecond

// reapLoop reaps orphans whenever a child changes state. A pass never waits
// for the fork lock (reap.TryExclusive): queued as its writer, it would
// make every later fork wait behind one fork whose exec hangs.
func (t *TreeKiller) reapLoop() {
	defer t.wg.Done()
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	for {
		select {
		case <-t.done:
			return
		case <-t.sigs:
		case <-t.kick:
		case <-retry.C:
		}
		if _, ok := t.tryReapOrphans(); !ok {
			retry.Reset(reapBusyRetry)
		}
	}
}

// reapOrphans reaps zombie orphans and returns how many orphans are left.
// A multi-threaded orphan shows 'Z' as soon as its main thread exits but
// is waitable only once every thread has; it counts as left until then
// (its SIGCHLD comes when it is waitable).
//
// It runs under reap.Exclusive: no child of the server's other code (an
// os/exec helper started with reap.StartCmd) can be forked and not yet
// registered meanwhile, so none is taken for an orphan.
func (t *TreeKiller) reapOrphans() (left int) {
	reap.Exclusive(func() { left = t.reapOrphansLocked() })
	return left
}

// tryReapOrphans is reapOrphans unless a fork is under way (ok false).
func (t *TreeKiller) tryReapOrphans() (left int, ok bool) {
	ok = reap.TryExclusive(func() { left = t.reapOrphansLocked() })
	return left, ok
}

// reapOrphansLocked is the body of reapOrphans, under reap.Exclusive.
func (t *TreeKiller) reapOrphansLocked() (left int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	w := watchdog.Load()
	for _, st := range t.untrackedChildren() {
		if st.state != 'Z' {
			left++
			if w != nil && !t.adopted[st.pid] {
				t.adopted[st.pid] = true // an orphan of ours: the watchdog kills it too
				w.watchChild(st.pid, -1, -1)
			}
			continue
		}
		var si siginfo
		if err := waitid(unix.P_PID, st.pid, &si, unix.WEXITED|unix.WNOHANG); err == nil && si.pid == 0 {
			left++
		} else if t.adopted[st.pid] {
			delete(t.adopted, st.pid)
			if w != nil {
				w.forgetChild(st.pid)
			}
		}
	}
	return left
}

// orphans returns the live orphans that re-parented to the server.
func (t *TreeKiller) orphans() (pids []int) {
	reap.Exclusive(func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		for _, st := range t.untrackedChildren() {
			if st.state != 'Z' {
				pids = append(pids, st.pid)
			}
		}
	})
	return pids
}

// untrackedChildren lists our children that no Process owns, that no
// other code owns (reap.Owned) and that are not in the server's session.
// Called under reap.Exclusive with t.mu held.
func (t *TreeKiller) untrackedChildren() []procStat {
	var out []procStat
	for _, pid := range childPids(t.selfPid) {
		if _, ok := t.tracked[pid]; ok || reap.Owned(pid) {
			continue
		}
		st, err := readStat(pid)
		if err != nil || st.ppid != t.selfPid || st.sid == t.selfSid {
			continue
		}
		out = append(out, st)
	}
	return out
}

// killWalk SIGKILLs the roots, every process in session or group sid (if
// non-zero) and all their descendants (stopAndKill), and returns their pids.
func (t *TreeKiller) killWalk(roots []int, sid int) []int {
	groups := map[int]bool{}
	if sid > 0 {
		groups[sid] = true
	}
	return stopAndKill(roots, groups, t.selfPid)
}

// stopAndKill SIGKILLs the roots, every process whose session or process
// group is in groups, and all their descendants, never self nor init. It
// SIGSTOPs what it finds first and walks /proc again until nothing new
// shows up, so a process forking during the walk cannot leave a child
// behind. Each pass walks with procIndex.tree, as the leftovers do. It
// returns the pids it killed.
func stopAndKill(roots []int, groups map[int]bool, self int) []int {
	stopped := make(map[int]struct{})
	for pass := 0; pass < maxWalkPasses; pass++ {
		x := indexProcs(scanProcs())
		from := slices.Clone(roots)
		for g := range groups {
			from = append(from, x.members[g]...)
		}
		found := false
		for _, pid := range x.tree(from, 0, stopped, self) {
			if _, ok := stopped[pid]; !ok && unix.Kill(pid, unix.SIGSTOP) == nil {
				stopped[pid] = struct{}{}
				found = true
			}
		}
		if !found {
			break
		}
	}
	killed := make([]int, 0, len(stopped))
	for pid := range stopped {
		_ = unix.Kill(pid, unix.SIGKILL)
		killed = append(killed, pid)
	}
	return killed
}
