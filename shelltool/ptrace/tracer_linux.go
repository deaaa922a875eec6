//go:build linux && (amd64 || arm64)

package ptrace

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// safetyTick bounds how long the tracer sleeps without a SIGCHLD or a
// worker result (it polls its tracees then): a lost wake-up costs latency,
// never a hang.
const safetyTick = 50 * time.Millisecond

// tracee is one traced thread. Only the tracer thread touches it.
type tracee struct {
	tid int
	// fresh: auto-attached, its initial PTRACE_EVENT_STOP not seen yet.
	fresh bool
	// helper: still runs the sandbox helper's image, whose own exec (the
	// plan's command, chosen by the server) is let through unjudged.
	helper bool
	// helperExec: a helper thread stopped at its seccomp exec stop, so its
	// next exec event is the plan's command (the exec event of the root's
	// own start, before any filter, has no such stop).
	helperExec bool
	// early: seen before its parent's fork event (helper unknown yet).
	early bool
	// judged is what the last Run decision let this thread exec; nil when
	// its last exec stop was let through unjudged.
	judged *target
	// gen numbers the decisions; a worker's result applies only while it
	// matches (the tracee may have died and its tid been reused).
	gen uint64
	// cancel ends the worker deciding or acting for this stopped thread;
	// nil when none is.
	cancel context.CancelFunc
}

// result is a worker's verdict on a stopped tracee.
type result struct {
	tid int
	gen uint64
	// exactly one of: resume (with judged recorded), exit (rewrite the
	// syscall into exit_group(code)), kill (SIGKILL at an exec event).
	resume bool
	judged *target
	exit   bool
	code   int
	kill   bool
}

// tracer is the state of the tracer thread.
type tracer struct {
	s       *Session
	root    int
	self    int // the tracer thread's tid
	tracees map[int]*tracee
	gen     uint64
	// outstanding counts the workers whose result is still to come.
	outstanding int
}

func newTracer(s *Session, root int) *tracer {
	t := &tracer{s: s, root: root, self: unix.Gettid(), tracees: map[int]*tracee{}}
	t.track(&tracee{tid: root, helper: true})
	return t
}

// seizeAll attaches to every thread of pid, listing them until no new one
// appears (a thread created by a seized one is attached by the kernel, and
// shows up here too: it is then already ours).
func (t *tracer) seizeAll(pid int) error {
	seized := map[int]bool{}
	for {
		ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
		if err != nil {
			return err
		}
		added := false
		for _, e := range ents {
			tid, err := strconv.Atoi(e.Name())
			if err != nil || seized[tid] {
				continue
			}
			seized[tid], added = true, true
			if err := seize(tid); err != nil {
				switch {
				case errors.Is(err, unix.ESRCH):
					continue // gone meanwhile
				case errors.Is(err, unix.EPERM) && tracerOf(tid) == t.self:
					t.add(tid, true, true) // auto-attached by a clone
					continue
				}
				return err
			}
			t.add(tid, false, true)
		}
		if !added {
			return nil
		}
	}
}

// add starts tracking tid, unless it is already tracked; a thread seen
// before its parent's fork event gets the parent's helper flag now, if it
// has not exec'd meanwhile.
func (t *tracer) add(tid int, fresh, helper bool) {
	if tr, ok := t.tracees[tid]; ok {
		if tr.early {
			tr.helper, tr.early = helper, false
		}
		return
	}
	t.track(&tracee{tid: tid, fresh: fresh, helper: helper})
}

// track records tr in the tracer's map and in the session's set of tids
// (which Kill reads); a tracee that appears once the session is being
// killed is killed at once.
func (t *tracer) track(tr *tracee) {
	t.tracees[tr.tid] = tr
	t.s.mu.Lock()
	t.s.tids[tr.tid] = struct{}{}
	t.s.mu.Unlock()
	if t.s.killing.Load() {
		_ = unix.Kill(tr.tid, unix.SIGKILL)
	}
}

// loop waits for and handles the tracees' stops and the workers' results
// until no tracee is left.
//
// While no worker is out, it blocks in wait4 itself: the kernel wakes it
// at once (Kill needs no wake-up: it signals the tracees directly). While
// a worker is out, it waits for a SIGCHLD, a result or a tick instead.
func (t *tracer) loop(sigs <-chan os.Signal) {
	tick := time.NewTicker(safetyTick)
	defer tick.Stop()
	for len(t.tracees) > 0 {
		if t.outstanding == 0 {
			t.wait(0)
			continue
		}
		if t.wait(unix.WNOHANG) {
			continue
		}
		select {
		case <-sigs:
		case r := <-t.s.results:
			t.outstanding--
			t.apply(r)
		case <-tick.C:
		}
	}
}

// wait collects the pending state changes of the tracer thread's
// tracees and reports whether there was any. It waits on -1 with
// __WNOTHREAD: only this thread's own children (the root alone: nothing
// else forks on this locked thread) and its tracees, which may include
// threads and processes whose fork or clone event it has not seen yet (a
// parent killed at that stop never reports it). Orphans re-parented to a
// subreaper server go to its main thread, which the tracer never is.
//
// With flags 0 it blocks for the first change, then collects the rest
// without blocking.
func (t *tracer) wait(flags int) bool {
	any := false
	for {
		var ws unix.WaitStatus
		tid, err := unix.Wait4(-1, &ws, flags|unix.WALL|unix.WNOTHREAD, nil)
		flags = unix.WNOHANG
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.ECHILD:
			// Nothing of ours is left, whatever the map says.
			for tid := range t.tracees {
				t.forget(tid)
			}
			return true
		case err != nil:
			t.s.log.Error("ptrace: wait", zap.Error(err))
			return any
		case tid <= 0:
			return any
		}
		any = true
		tr, ok := t.tracees[tid]
		if !ok {
			if !ws.Stopped() {
				continue // an untracked thread's exit: nothing to do
			}
			// Its parent's fork event is still to come: judge its execs
			// (not a helper) until that event says otherwise.
			tr = &tracee{tid: tid, fresh: true, early: true}
			t.track(tr)
		}
		t.handle(tr, ws)
	}
}

// forget stops tracking tid and ends its worker, if any.
func (t *tracer) forget(tid int) {
	if tr, ok := t.tracees[tid]; ok && tr.cancel != nil {
		tr.cancel()
	}
	delete(t.tracees, tid)
	t.s.mu.Lock()
	delete(t.s.tids, tid)
	t.s.mu.Unlock()
}

// tracerOf returns the TracerPid of tid (0 when unknown).
func tracerOf(tid int) int {
	v, _ := statusField(tid, "TracerPid")
	return v
}

// statusField reads an integer field of /proc/TID/status.
func statusField(tid int, name string) (int, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, errors.New("no " + name + " in status")
}
