package execserver

// The graceful drain of a server that is asked to stop (docs/operations.md
// §5): no new session or process is admitted, every process tree gets
// SIGTERM, and those still running when the grace ends (or at a second
// signal) are killed; meanwhile the clients receive the exits and closes.

import (
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/codexec/codex/proc"
	"go.uber.org/zap"
)

// afterKillWait bounds the wait of a drain, once it killed what was left,
// for the exits of those processes to be published; closeLag bounds the
// wait for their closes after that. A SIGKILLed tree is reaped and its
// pipes end within milliseconds, but on a loaded two-core host a close
// came 113 ms after its exit (a wait of 30 ms lost that process/closed,
// and one of 10 ms lost one in CI). The wait
// ends as soon as every close is published; only a close held up by a
// client that does not read waits it out, and that client gets nothing
// more. Together they keep the exit within about 300 ms of the kill.
const (
	afterKillWait = 60 * time.Millisecond
	closeLag      = 250 * time.Millisecond
)

// drainState is the part of a Registry that the drain uses.
type drainState struct {
	once    sync.Once
	started chan struct{}                // closed when the drain begins
	on      atomic.Bool                  // the drain began: nothing new is admitted
	running atomic.Int64                 // processes not yet closed, of both families
	killed  atomic.Pointer[map[int]bool] // the processes the drain SIGKILLed at the end of its grace
	changed chan struct{}                // 1-buffered: running went down
}

func newDrainState() drainState {
	return drainState{started: make(chan struct{}), changed: make(chan struct{}, 1)}
}

// draining returns a channel closed when the drain begins.
func (r *Registry) draining() <-chan struct{} { return r.drain.started }

// isDraining reports whether the drain began.
func (r *Registry) isDraining() bool { return r.drain.on.Load() }

// procUp counts a process that runs until procDown.
func (r *Registry) procUp() { r.drain.running.Add(1) }

// procDown counts the close of a process counted by procUp.
func (r *Registry) procDown() {
	r.drain.running.Add(-1)
	select {
	case r.drain.changed <- struct{}{}:
	default:
	}
}

// Drain stops the admission of sessions and processes, sends SIGTERM to
// every process tree (the process group, as a graceful process/terminate
// does) and waits until every process is closed, its exit and close
// published to its client. When grace has passed, or hurry is closed (a
// second signal), it kills what is left and waits up to afterKillWait for
// those closes. The connections stay open: the caller closes them next
// (with 1001), then calls Shutdown. Drain is called once.
func (r *Registry) Drain(grace time.Duration, hurry <-chan struct{}) {
	r.drain.on.Store(true)
	r.drain.once.Do(func() { close(r.drain.started) })
	r.log.Info("draining", zap.Int("processes", int(r.drain.running.Load())), zap.Duration("grace", grace))
	if grace > 0 && r.terminateAll(time.Now().Add(grace), hurry) {
		return
	}
	live := r.liveEntries()
	ps := make([]*proc.Process, 0, len(live))
	for _, e := range live {
		if p := e.p.Load(); p != nil {
			ps = append(ps, p)
		}
	}
	killed := proc.TreePids(ps, nil)
	r.drain.killed.Store(&killed)
	r.log.Info("drain grace over; killing what is left", zap.Int("processes", int(r.drain.running.Load())), zap.Int("processes_killed", len(killed)))
	// Only the exits of processes that were still running, or that ended
	// just now, are worth the wait: one that exited earlier and is not
	// yet published is held up by a client that does not read, which gets
	// nothing more.
	var running []*entry
	recent := time.Now().Add(-afterKillWait)
	for _, e := range live {
		if p := e.p.Load(); p == nil || !isDone(p.Exited()) || p.ExitedAt().After(recent) {
			running = append(running, e)
		}
		e.stop(errShutdown)
	}
	live = running
	if len(live) == 0 {
		return
	}
	short := time.NewTimer(afterKillWait)
	defer short.Stop()
	for !allExited(live) && r.drain.running.Load() > 0 {
		select {
		case <-r.drain.changed:
		case <-short.C:
			return
		case <-time.After(time.Millisecond):
		}
	}
	lag := time.NewTimer(closeLag)
	defer lag.Stop()
	r.waitClosed(lag.C, nil)
}

// terminateAll sends SIGTERM to every process tree, and to what finished
// commands left running (`server &`, part of their trees), and waits
// until all of it is gone (true) or until deadline or hurry (false).
func (r *Registry) terminateAll(deadline time.Time, hurry <-chan struct{}) bool {
	for _, e := range r.liveEntries() {
		e.stop(&gracefulTerminate{grace: time.Until(deadline), drain: true})
	}
	for _, l := range r.allLeftovers() {
		l.Signal(syscall.SIGTERM)
	}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	// Processes closing meanwhile leave theirs to adopt (which sends
	// SIGTERM during a drain): once none runs, the list is complete.
	return r.waitClosed(timer.C, hurry) && r.leftoversGone(timer.C, hurry)
}

// leftoverPoll is how often a drain looks whether the leftovers it sent
// SIGTERM to are gone.
const leftoverPoll = 20 * time.Millisecond

// leftoversGone waits until nothing the sessions' leftovers hold runs
// (true), or until timeout fires or hurry is closed (false). The Shutdown
// that follows kills what is left.
func (r *Registry) leftoversGone(timeout <-chan time.Time, hurry <-chan struct{}) bool {
	tick := time.NewTicker(leftoverPoll)
	defer tick.Stop()
	for proc.CountTrees(nil, r.allLeftovers()) > 0 {
		select {
		case <-tick.C:
		case <-timeout:
			return false
		case <-hurry:
			return false
		}
	}
	return true
}

// allLeftovers returns the leftovers of every session.
func (r *Registry) allLeftovers() []*proc.Leftovers {
	r.mu.Lock()
	sessions := make([]*Session, 0, len(r.sessions))
	for _, s := range r.sessions {
		sessions = append(sessions, s)
	}
	r.mu.Unlock()
	var out []*proc.Leftovers
	for _, s := range sessions {
		_, ls := s.trees()
		out = append(out, ls...)
	}
	return out
}

// isDone reports whether ch is closed.
func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// allExited reports whether the exit of every entry was published.
func allExited(es []*entry) bool {
	for _, e := range es {
		if entryState(e.state.Load()) < stateExited {
			return false
		}
	}
	return true
}

// waitClosed waits until no process runs (true), or until timeout fires
// or hurry is closed (false).
func (r *Registry) waitClosed(timeout <-chan time.Time, hurry <-chan struct{}) bool {
	for r.drain.running.Load() > 0 {
		select {
		case <-r.drain.changed:
		case <-timeout:
			return false
		case <-hurry:
			return false
		}
	}
	return true
}

// liveEntries returns the entries of every session that are not closed.
// An entry admitted after the drain began is refused (Session.admit), so
// none is missed: admit checks the drain under the session's lock taken
// here.
func (r *Registry) liveEntries() []*entry {
	r.mu.Lock()
	sessions := make([]*Session, 0, len(r.sessions))
	for _, s := range r.sessions {
		sessions = append(sessions, s)
	}
	r.mu.Unlock()
	var out []*entry
	for _, s := range sessions {
		s.mu.Lock()
		for _, e := range s.procs {
			if entryState(e.state.Load()) < stateClosed {
				out = append(out, e)
			}
		}
		s.mu.Unlock()
	}
	return out
}
