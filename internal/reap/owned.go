// Package reap keeps the set of child processes this process owns, and
// reaps (Reaper) the other children: orphans that re-parented to us
// because we are PID 1 of a PID namespace or a child subreaper.
//
// # Owned children
//
// Every place of the server that forks a child and later waits for it by
// pid (proc's Start, os/exec's Cmd.Wait for the sandbox helper of an fs
// call or the sandbox probe) forks through Fork or StartCmd, and calls
// Done or WaitCmd once it reaped the child. A Reaper never reaps an owned
// pid, so it cannot steal the exit status an owner is waiting for.
//
// # Why there is no race
//
// The dangerous moment is between the fork and the registration: a child
// that exits at once is a zombie before its owner recorded its pid, and a
// reaper scanning then would take it for an orphan. Fork closes that gap
// with a read-write lock: forks hold it shared from before the fork until
// the pid is registered, and a reaper holds it exclusively for a whole
// scan-and-reap pass (Exclusive). So a pass sees each child either before
// it exists or after it is registered. The other end is safe too: Done
// runs only after the owner reaped the child, so the pid is never unowned
// while its zombie still waits for the owner. A pid that is reused after
// that belongs to a new fork, which again cannot happen during a pass.
//
// The lock is process-wide, not per Reaper, because every reaper in the
// process (proc's subreaper fallback and the init Reaper) must exclude
// every owner's forks.
//
// # Passes while forks run
//
// Under back-to-back forks the lock may never be free, and a fork whose
// exec hangs (a binary on a stuck mount) holds it for as long as it hangs.
// Then a Reaper reaps only the zombies born before the oldest fork in
// flight began (ForkHorizon), which no fork in flight can have made: a
// child is born after its fork began. Every pass that reaps children it
// does not own, with the lock or without it, holds one more mutex
// (passMu), so that a zombie one pass found unowned cannot be reaped by
// another and its pid given to a new fork before the first one reaps it.
package reap

import (
	"os/exec"
	"sync"
	"sync/atomic"
)

// owned is the process-wide registry.
var owned = struct {
	fork     sync.RWMutex   // shared by forks until registration; exclusive for a reap pass
	passMu   sync.Mutex     // held by every pass that reaps unowned children
	mu       sync.Mutex     // guards pids and inflight
	pids     map[int]int    // owned pid -> registrations (a reused pid may be registered twice)
	inflight map[uint64]int // boot time (clock ticks) a fork in flight began -> forks

	// kickOnFork asks for a pass of the reapers when the oldest forks in
	// flight have ended (the horizon moves): a pass left a zombie born
	// after they began.
	kickOnFork atomic.Bool
}{pids: make(map[int]int), inflight: make(map[uint64]int)}

// Fork calls start, which forks one child and returns its pid, and
// registers the pid as owned before any reap pass can look at it. The
// owner must call Done(pid) after it reaped the child. start must not call
// Fork or StartCmd itself.
func Fork(start func() (pid int, err error)) (int, error) {
	owned.fork.RLock()
	defer owned.fork.RUnlock()
	owned.mu.Lock()
	began := bootTicks() // under mu: see ForkHorizon
	owned.inflight[began]++
	owned.mu.Unlock()
	pid, err := start()
	owned.mu.Lock()
	if err == nil && pid > 0 {
		owned.pids[pid]++
	}
	moved := false // the horizon moved: this was the last of the oldest forks
	if owned.inflight[began] <= 1 {
		delete(owned.inflight, began)
		if owned.kickOnFork.Load() {
			moved = true
			for t := range owned.inflight {
				if t < began {
					moved = false
					break
				}
			}
		}
	} else {
		owned.inflight[began]--
	}
	owned.mu.Unlock()
	if moved && owned.kickOnFork.CompareAndSwap(true, false) {
		kickAll()
	}
	return pid, err
}

// Done forgets pid, whose owner has reaped it, and asks the running
// Reapers for a pass: orphans the child left behind may be waiting.
func Done(pid int) {
	owned.mu.Lock()
	if owned.pids[pid] <= 1 {
		delete(owned.pids, pid)
	} else {
		owned.pids[pid]--
	}
	owned.mu.Unlock()
	kickAll()
}

// Owned reports whether pid is a registered child.
func Owned(pid int) bool {
	owned.mu.Lock()
	defer owned.mu.Unlock()
	return owned.pids[pid] > 0
}

// ForkHorizon returns a boot time, in clock ticks (as the start time in
// /proc/PID/stat): no child born before it comes from a fork in flight or
// to come. It is when the oldest fork in flight began, or now if none is
// (forking false).
// Both are read under owned.mu, under which every fork reads its own start
// time, so a fork not yet counted began now or later.
func ForkHorizon() (h uint64, forking bool) {
	owned.mu.Lock()
	defer owned.mu.Unlock()
	h = bootTicks()
	for t := range owned.inflight {
		h = min(h, t)
	}
	return h, len(owned.inflight) > 0
}

// TryExclusive is Exclusive without waiting: it runs f and reports true
// when no fork is between its start and its registration, and otherwise
// reports false at once. A caller that waited instead would queue as the
// fork lock's writer, and every later fork would wait behind it for a
// fork that may never end (an exec of a file on a hung mount).
func TryExclusive(f func()) bool {
	if !owned.passMu.TryLock() {
		return false // another pass runs, or waits for the lock (Exclusive)
	}
	defer owned.passMu.Unlock()
	if !owned.fork.TryLock() {
		return false
	}
	defer owned.fork.Unlock()
	f()
	return true
}

// WhileForking runs f, a pass that reaps only the unowned children born
// before ForkHorizon, apart from every other pass (see the package doc),
// and reports true; when another pass runs or waits for the fork lock, it
// reports false at once without running f.
func WhileForking(f func()) bool {
	if !owned.passMu.TryLock() {
		return false
	}
	defer owned.passMu.Unlock()
	f()
	return true
}

// StandAside tells the reapers of unowned children (StartChildren) that
// another reaper of this process keeps books on its children and reaps
// them itself (proc's subreaper mode, which hands the orphans it adopts to
// its watchdog). They leave every child alone until the returned function
// is called.
func StandAside() (resume func()) {
	aside.Add(1)
	var once sync.Once
	return func() { once.Do(func() { aside.Add(-1) }) }
}

// aside counts the StandAside calls not yet resumed.
var aside atomic.Int32

// Exclusive runs f while no fork is between its start and its
// registration, and none can start: during f, every child of ours is
// either Owned or an orphan. f must not fork.
func Exclusive(f func()) {
	owned.passMu.Lock()
	defer owned.passMu.Unlock()
	owned.fork.Lock()
	defer owned.fork.Unlock()
	f()
}

// StartCmd starts cmd (cmd.Start) as an owned child. Wait for it with
// WaitCmd.
func StartCmd(cmd *exec.Cmd) error {
	_, err := Fork(func() (int, error) {
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		return cmd.Process.Pid, nil
	})
	return err
}

// WaitCmd waits for cmd (cmd.Wait), which StartCmd started, and then
// releases its pid.
func WaitCmd(cmd *exec.Cmd) error {
	err := cmd.Wait()
	Done(cmd.Process.Pid)
	return err
}

// reapers are the kick channels of the running Reapers.
var reapers = struct {
	mu    sync.Mutex
	kicks map[chan struct{}]struct{}
}{kicks: make(map[chan struct{}]struct{})}

// kickAll asks every running Reaper for a pass, without blocking.
func kickAll() {
	reapers.mu.Lock()
	defer reapers.mu.Unlock()
	for k := range reapers.kicks {
		select {
		case k <- struct{}{}:
		default: // a pass is already due
		}
	}
}

// RunCmd is StartCmd followed by WaitCmd, as cmd.Run.
func RunCmd(cmd *exec.Cmd) error {
	if err := StartCmd(cmd); err != nil {
		return err
	}
	return WaitCmd(cmd)
}
