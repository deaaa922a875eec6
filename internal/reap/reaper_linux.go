//go:build linux

package reap

import (
	"errors"
	"os"
	ossignal "os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// Reaper reaps the children of this process that nobody owns (see Owned):
// orphans re-parented to us (Start), or only the children a child of ours
// made with clone(CLONE_PARENT) (StartChildren). It runs one goroutine,
// woken by SIGCHLD and Done; Close stops it.
type Reaper struct {
	log       *zap.Logger
	subreaper bool          // Start set PR_SET_CHILD_SUBREAPER; Close clears it
	every     time.Duration // StartChildren: the least time between two passes
	sigs      chan os.Signal
	kick      chan struct{}
	done      chan struct{}
	wg        sync.WaitGroup
	reaped    atomic.Int64
	older     atomic.Int64 // passes while forks were in flight (passOlder), for the tests
	closeOnce sync.Once
}

// Start starts a Reaper. As PID 1 of a PID namespace every orphan of the
// namespace comes to us already; otherwise Start makes this process a
// child subreaper (PR_SET_CHILD_SUBREAPER), so that the orphans of our own
// descendants do, and Close undoes that. A nil logger means no logging.
func Start(log *zap.Logger) (*Reaper, error) {
	r := newReaper(log)
	if os.Getpid() != 1 {
		var prev int32
		_ = unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&prev)), 0, 0, 0)
		if prev == 0 {
			if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
				return nil, os.NewSyscallError("prctl(PR_SET_CHILD_SUBREAPER)", err)
			}
			r.subreaper = true
		}
	}
	r.run()
	r.log.Info("reaping orphaned processes", zap.Int("pid", os.Getpid()), zap.Bool("subreaper", r.subreaper))
	return r, nil
}

// StartChildren starts a Reaper of this process's own children that nobody
// owns, without taking in orphans (it does not make this process a
// subreaper). Such children are not forked by us: a child of ours that
// calls clone(CLONE_PARENT) gives us a sibling of itself, which nobody
// waits for; unreaped, each stays a zombie for our whole life, holding a
// pid. A pass starts with one waitid(P_ALL, WNOWAIT) (passChildren) and
// passes run at most once per every: a burst of exits costs a pass or two,
// and an unowned zombie lasts about every at most after its SIGCHLD (the
// kernel gives a clone(CLONE_PARENT) child the exit signal of its caller,
// our child's, which is SIGCHLD) or the next Done. It stands
// aside while another reaper keeps books on our children (StandAside).
func StartChildren(log *zap.Logger, every time.Duration) *Reaper {
	r := newReaper(log)
	r.every = every
	r.run()
	return r
}

func newReaper(log *zap.Logger) *Reaper {
	if log == nil {
		log = zap.NewNop()
	}
	return &Reaper{
		log:  log,
		sigs: make(chan os.Signal, 1),
		kick: make(chan struct{}, 1),
		done: make(chan struct{}),
	}
}

// run registers r and starts its goroutine, with a first pass for the
// children that exited before.
func (r *Reaper) run() {
	ossignal.Notify(r.sigs, unix.SIGCHLD)
	reapers.mu.Lock()
	reapers.kicks[r.kick] = struct{}{}
	reapers.mu.Unlock()
	r.kick <- struct{}{}
	r.wg.Add(1)
	go r.loop()
}

// Reaped returns how many orphans the Reaper has reaped so far.
func (r *Reaper) Reaped() int64 { return r.reaped.Load() }

// Close stops the Reaper after a last pass and clears the subreaper flag
// if Start set it. Idempotent.
func (r *Reaper) Close() {
	r.closeOnce.Do(func() {
		ossignal.Stop(r.sigs)
		reapers.mu.Lock()
		delete(reapers.kicks, r.kick)
		reapers.mu.Unlock()
		close(r.done)
		r.wg.Wait()
		r.pass()
		if r.subreaper {
			_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
		}
		r.log.Debug("orphan reaper stopped", zap.Int64("reaped", r.reaped.Load()))
	})
}

// busyRetry is how soon a Reaper tries again after a pass found a fork
// between its start and its registration (TryExclusive).
const busyRetry = 10 * time.Millisecond

// loop runs a pass whenever a child changed state or an owner released one,
// at most once per r.every: what wakes it meanwhile is served by the pass
// at the end of the wait. A pass that a fork in flight put off is tried
// again busyRetry (or r.every) later.
func (r *Reaper) loop() {
	defer r.wg.Done()
	var last time.Time
	wait := time.NewTimer(time.Hour)
	wait.Stop()
	defer wait.Stop()
	retry := false
	for {
		if !retry {
			select {
			case <-r.done:
				return
			case <-r.sigs:
			case <-r.kick:
			}
		}
		d := r.every - time.Since(last)
		if retry {
			d = max(d, busyRetry)
		}
		if d > 0 {
			wait.Reset(d)
			select {
			case <-r.done:
				return
			case <-wait.C:
			}
		}
		retry = !r.pass()
		last = time.Now()
	}
}

// pass reaps every unowned child that has exited. SIGCHLDs coalesce, so a
// pass does not stop at one: it reaps all it finds. It never makes a fork
// wait: while one is in flight it reaps what was born before it
// (passOlder), and the end of a fork in flight calls for the next pass.
// It reports false when it should be tried again soon: another pass ran.
func (r *Reaper) pass() bool {
	if r.every > 0 {
		if aside.Load() > 0 {
			return true // another reaper keeps books on our children (StandAside)
		}
		if TryExclusive(r.passChildren) {
			return true
		}
	} else if TryExclusive(r.passListed) {
		return true
	}
	done := false
	return WhileForking(func() { done = r.passOlder() }) && done
}

// passOlder is a pass while forks are in flight: it reaps every unowned
// zombie born before ForkHorizon. A younger one waits for the end of the
// forks in flight, which kicks the reapers (kickOnFork): polling would not
// move the horizon, which a hung exec holds for as long as it hangs. It
// reports false if it could not list our children, or left a zombie born
// in the current clock tick while no fork was in flight. Called under
// WhileForking.
func (r *Reaper) passOlder() bool {
	r.older.Add(1)
	if r.every > 0 && !r.unownedFirst() {
		return true
	}
	// Asked before the horizon is read: a fork in flight then that ends
	// later calls for the next pass, which may reap what this one leaves.
	owned.kickOnFork.Store(true)
	horizon, forking := ForkHorizon()
	pids, err := childPids()
	if err != nil {
		return false // without /proc only a pass under the fork lock is safe
	}
	young := false
	for _, pid := range pids {
		if Owned(pid) || !exited(pid) {
			continue // a live child costs one waitid, as in passListed
		}
		born, zombie := zombieBorn(pid)
		switch {
		case !zombie:
		case born >= horizon:
			young = true // maybe a fork in flight's child, not yet registered
		default:
			r.reap(pid)
		}
	}
	if !young {
		owned.kickOnFork.Store(false)
	}
	// Born in this clock tick with no fork in flight: the next tick moves
	// the horizon, and no fork's end may come to say so.
	return !young || forking
}

// exited reports whether pid, a child of ours, has exited and can be
// reaped, without reaping it (WNOWAIT): one waitid, where reading its stat
// costs an open, a read and a close.
func exited(pid int) bool {
	var si siginfo
	err := waitid(unix.P_PID, pid, &si, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT|unix.WALL)
	for err == unix.EINTR {
		err = waitid(unix.P_PID, pid, &si, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT|unix.WALL)
	}
	return err == nil && si.pid != 0
}

// statReads counts zombieBorn's reads of /proc/PID/stat: what the tests
// of a pass's cost look at.
var statReads atomic.Int64

// zombieBorn reports whether pid is a zombie, and its start time in clock
// ticks since boot.
func zombieBorn(pid int) (born uint64, zombie bool) {
	statReads.Add(1)
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(data[i+1:]))
	// f[0] is the state (field 3), f[19] the start time (field 22).
	if len(f) < 20 || f[0] != "Z" {
		return 0, false
	}
	born, err = strconv.ParseUint(f[19], 10, 64)
	return born, err == nil
}

// bootTicks is the time since boot in clock ticks (USER_HZ, 100 on Linux),
// rounded down as the kernel rounds a process's start time.
func bootTicks() uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return 0 // no pass without the lock reaps anything then
	}
	return uint64(ts.Nano()) / (1e9 / 100)
}

// passListed lists our children once (passBlind without /proc) and reaps
// every unowned one that has exited. Called under the fork lock.
func (r *Reaper) passListed() {
	pids, err := childPids()
	if err != nil {
		r.passBlind()
		return
	}
	for _, pid := range pids {
		if !Owned(pid) {
			r.reap(pid)
		}
	}
}

// reap reaps pid if it has exited. __WALL: an orphan's exit signal is
// reset to SIGCHLD when it re-parents, but a clone child of ours might not
// have one.
func (r *Reaper) reap(pid int) bool {
	var ws unix.WaitStatus
	got, err := unix.Wait4(pid, &ws, unix.WNOHANG|unix.WALL, nil)
	for err == unix.EINTR {
		got, err = unix.Wait4(pid, &ws, unix.WNOHANG|unix.WALL, nil)
	}
	if err != nil || got != pid {
		return false // still running (or not a child any more)
	}
	r.reaped.Add(1)
	if r.every > 0 {
		r.log.Debug("reaped a child nobody owns (a child's clone(CLONE_PARENT))", zap.Int("pid", pid), zap.Int("status", int(ws)))
	} else {
		r.log.Debug("reaped orphan", zap.Int("pid", pid), zap.Int("status", int(ws)))
	}
	return true
}

// passChildren is StartChildren's pass. One waitid(P_ALL, WNOWAIT), whose
// kernel cost grows with our children, says whether an unowned zombie is
// first in line; only then are the children listed once and every unowned
// one reaped that has exited. An owned zombie first in line ends the pass
// (its owner's Done asks for the next). Looping on waitid instead would
// cost zombies × children, all of it under the fork lock.
func (r *Reaper) passChildren() {
	if r.unownedFirst() {
		r.passListed()
	}
}

// unownedFirst reports whether the exited child first in line for
// waitid(P_ALL) is one nobody owns, without reaping it.
func (r *Reaper) unownedFirst() bool {
	var si siginfo
	err := waitid(unix.P_ALL, 0, &si, unix.WEXITED|unix.WNOWAIT|unix.WNOHANG|unix.WALL)
	for err == unix.EINTR {
		err = waitid(unix.P_ALL, 0, &si, unix.WEXITED|unix.WNOWAIT|unix.WNOHANG|unix.WALL)
	}
	return err == nil && si.pid != 0 && !Owned(int(si.pid))
}

// passBlind is the pass without /proc: waitid(P_ALL, WNOWAIT) names one
// exited child without reaping it, and it is reaped only if unowned. An
// owned child first in line ends the pass early; its owner's Done starts
// the next one.
func (r *Reaper) passBlind() {
	for {
		var si siginfo
		err := waitid(unix.P_ALL, 0, &si, unix.WEXITED|unix.WNOWAIT|unix.WNOHANG|unix.WALL)
		if err == unix.EINTR {
			continue
		}
		if err != nil || si.pid == 0 || Owned(int(si.pid)) || !r.reap(int(si.pid)) {
			return
		}
	}
}

// errForeignProc: /proc was mounted in another PID namespace (a PID
// namespace entered without remounting /proc), so its pids are not ours.
var errForeignProc = errors.New("/proc belongs to another PID namespace")

// childPids lists our children from the per-thread "children" files
// (an orphan re-parents to any of our threads).
func childPids() ([]int, error) {
	if self, err := os.Readlink("/proc/self"); err != nil || self != strconv.Itoa(os.Getpid()) {
		return nil, errForeignProc
	}
	const base = "/proc/self/task/"
	tasks, err := os.ReadDir(base)
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, task := range tasks {
		data, err := os.ReadFile(base + task.Name() + "/children")
		if err != nil {
			if os.IsNotExist(err) && task.Name() == strconv.Itoa(os.Getpid()) {
				return nil, err // CONFIG_PROC_CHILDREN is off
			}
			continue // the thread exited
		}
		for _, f := range strings.Fields(string(data)) {
			if c, err := strconv.Atoi(f); err == nil {
				pids = append(pids, c)
			}
		}
	}
	return pids, nil
}

// siginfo is the SIGCHLD view of the kernel's siginfo_t (unix.Siginfo
// leaves it opaque): only the pid is read.
type siginfo struct {
	signo, errno, code int32
	_                  [siginfoPad]byte
	pid                int32
	_                  [128 - 16 - siginfoPad]byte
}

// siginfoPad aligns the siginfo union to a pointer.
const siginfoPad = unsafe.Sizeof(uintptr(0)) - 4

// waitid is waitid(2) with the siginfo above.
func waitid(idtype, id int, si *siginfo, options int) error {
	_, _, e := unix.Syscall6(unix.SYS_WAITID, uintptr(idtype), uintptr(id),
		uintptr(unsafe.Pointer(si)), uintptr(options), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}
