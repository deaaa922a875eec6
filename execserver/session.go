package execserver

import (
	"container/list"
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	fastb64 "github.com/segmentio/asm/base64"
	"go.uber.org/zap"

	"github.com/codexec/codex/proc"
	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/sandbox"
	"github.com/codexec/codex/wire"
)

// Session is a process table that outlives connections (docs/protocol.md §5.2).
// At most one connection is attached at a time; notifications go only to it,
// and are dropped while the session is detached.
//
// Lock order: Registry.mu, then Session.mu, then eventLog.mu. entry.emitMu
// is taken before eventLog.mu and never while holding Session.mu.
type Session struct {
	id     string
	reg    *Registry
	log    *zap.Logger
	ctx    context.Context // cancelled with the cause when the session ends (see end)
	cancel context.CancelCauseFunc

	attached atomic.Pointer[rpc.Conn] // the connection notifications go to
	credit   *proc.OutputCredit       // bounds the output in flight to it

	// sends bounds the notifications' wait for room in the connection's
	// queue: it ends with the session, except at session/end, whose
	// client still reads (see endByClient).
	sends     context.Context
	stopSends context.CancelFunc

	mu    sync.Mutex
	procs map[string]*entry // guarded by mu
	live  int               // guarded by mu: entries not yet closed
	ran   bool              // guarded by mu: a process was admitted once
	ended bool              // guarded by mu: no new processes

	// What the end of the session waits for and kills, guarded by mu.
	unfinished int               // admitted entries whose finish has not returned
	leftovers  []*proc.Leftovers // what closed processes left running
	pruneAt    int               // len(leftovers) that triggers a prune
	idle       chan struct{}     // made with the session; closed once ended with nothing unfinished
	endCause   error             // why the session ended

	expiry    *time.Timer   // guarded by reg.mu: runs while detached
	emptyElem *list.Element // guarded by reg.mu: on reg.emptyDetached
}

// ID returns the session id (a UUIDv4).
func (s *Session) ID() string { return s.id }

// conn returns the attached connection, or nil.
func (s *Session) conn() *rpc.Conn { return s.attached.Load() }

// lookup returns the entry for id, or nil.
func (s *Session) lookup(id string) *entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.procs[id]
}

// ranProcesses reports whether a process was ever admitted.
func (s *Session) ranProcesses() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ran
}

// end ends the session for cause (TTL expiry, shutdown, the connection's
// close with --session-ttl 0, session/end): it takes no new processes,
// drops the closed entries kept for reads, and cancels its context with
// cause, which every process's watcher acts on (and blocked notifications
// give up, but for session/end). It kills what closed processes left
// running before it returns; the watchers kill the rest as they act.
func (s *Session) end(cause error) {
	s.mu.Lock()
	s.ended = true
	s.endCause = cause
	for id, e := range s.procs {
		if e.retain != nil {
			// Closed and kept only for reads, which can no longer come.
			e.retain.Stop()
			delete(s.procs, id)
		}
	}
	left := s.leftovers
	s.leftovers = nil
	s.noteIdle()
	s.mu.Unlock()
	if !errors.Is(cause, errSessionEnded) {
		s.stopSends()
	}
	s.cancel(cause)
	for _, l := range left {
		l.Kill()
	}
}

// noteIdle closes idle once the session has ended with no entry left
// unfinished. Called with s.mu held.
func (s *Session) noteIdle() {
	if s.ended && s.unfinished == 0 {
		select {
		case <-s.idle:
		default:
			close(s.idle)
		}
	}
}

// treeSize returns the number of processes the end of the session kills:
// those of every live process's tree, and the leftovers of closed ones.
func (s *Session) treeSize() int { return countTrees([]*Session{s}) }

// trees returns the processes of s not yet closed and its leftovers.
func (s *Session) trees() ([]*proc.Process, []*proc.Leftovers) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ps []*proc.Process
	for _, e := range s.procs {
		if p := e.p.Load(); p != nil && entryState(e.state.Load()) < stateClosed {
			ps = append(ps, p)
		}
	}
	return ps, slices.Clone(s.leftovers)
}

// countTrees is treeSize of several sessions at once (one /proc scan).
func countTrees(sessions []*Session) int { return len(treePids(sessions)) }

// treePids is the set of the processes countTrees counts.
func treePids(sessions []*Session) map[int]bool {
	var ps []*proc.Process
	var ls []*proc.Leftovers
	for _, s := range sessions {
		p, l := s.trees()
		ps, ls = append(ps, p...), append(ls, l...)
	}
	pids := proc.TreePids(ps, ls)
	if pids == nil {
		pids = map[int]bool{}
	}
	return pids
}

// adopt takes what a closed process of the session left running (nil:
// nothing), to kill it when the session ends; at once if it has ended.
// Every time the list doubles, what ended by itself is dropped.
func (s *Session) adopt(l *proc.Leftovers) {
	if l == nil {
		return
	}
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		l.Kill()
		return
	}
	if s.reg.isDraining() {
		l.Signal(syscall.SIGTERM) // the drain's SIGTERM went out before it was adopted
	}
	s.leftovers = append(s.leftovers, l)
	var check []*proc.Leftovers
	if len(s.leftovers) >= s.pruneAt {
		check = slices.Clone(s.leftovers)
		s.pruneAt = 2*len(check) + 16
	}
	s.mu.Unlock()
	gone := map[*proc.Leftovers]bool{}
	for _, l := range check {
		if l.Len() == 0 {
			gone[l] = true
			l.Kill() // removes its empty cgroup leaf
		}
	}
	if len(gone) > 0 {
		s.mu.Lock()
		s.leftovers = slices.DeleteFunc(s.leftovers, func(l *proc.Leftovers) bool { return gone[l] })
		s.mu.Unlock()
	}
}

// remove drops an entry from the table if it is still the one registered.
func (s *Session) remove(e *entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.procs[e.id] == e {
		delete(s.procs, e.id)
	}
}

// entryState is the monotonic lifecycle of an entry.
type entryState int32

const (
	stateStarting entryState = iota
	stateRunning
	stateExited
	stateClosed
)

// entry is one process of a session: its OS process, its event log and the
// bookkeeping of the wire protocol (write ids, start gate).
type entry struct {
	id   string
	qid  []byte // id as a JSON string
	sess *Session
	log  *eventLog

	state     atomic.Int32 // entryState; only moves forward
	p         atomic.Pointer[proc.Process]
	started   chan struct{} // closed once the start response is queued
	sandboxed bool
	argv0     string    // argv[0] as given, for the logs (never the rest: it may hold secrets)
	tty       bool      // for the logs
	startedAt time.Time // when process/start was received
	bytesOut  atomic.Int64

	// ctx is cancelled with the first cause to end the process (see
	// lifecycle.go); it derives from the session's. Later causes go to
	// later. Only the watcher acts on them.
	ctx    context.Context
	cancel context.CancelCauseFunc
	later  mailbox

	emitMu sync.Mutex // orders seq assignment and hand-off to the connection

	writeMu    sync.Mutex
	writeIDs   map[string]struct{} // guarded by writeMu; the last maxWriteIDs ids
	writeOrder []string            // guarded by writeMu; FIFO of writeIDs

	// protect holds the protected names of a sandboxed run (missing
	// .git/.agents/.codex under a writable root): handles on their parents
	// and the placeholders the helper mounts on. Released after the run,
	// which also covers a helper that was killed first; nil if none.
	protect *sandbox.HostGuard
	// proxy is the command's managed network proxy, closed with the
	// entry (finish); nil if none.
	proxy *commandProxy

	retain *time.Timer // guarded by sess.mu: removes the closed entry after ExitedRetention
}

const maxWriteIDs = 4096

func (e *entry) setState(s entryState) {
	for {
		cur := e.state.Load()
		if int32(s) <= cur || e.state.CompareAndSwap(cur, int32(s)) {
			return
		}
	}
}

// emit is the OutputFunc of the process: it assigns the seq, retains the
// chunk and hands the notification to the attached connection, blocking
// while that connection's queue is full (backpressure).
func (e *entry) emit(s proc.Stream, data []byte) {
	<-e.started
	e.emitMu.Lock()
	defer e.emitMu.Unlock()
	seq := e.log.appendOutput(s, data)
	e.bytesOut.Add(int64(len(data)))
	e.sess.reg.cfg.Metrics.Output(len(data))
	if c := e.sess.conn(); c != nil {
		_ = c.Send(e.sess.sends, wire.AppendOutputNotification(rpc.AcquireFrameSize(wire.OutputFrameSize(len(data))), e.qid, seq, s.String(), data, appendBase64), true)
	}
}

func (e *entry) emitExited(code int, denied bool) {
	e.emitMu.Lock()
	defer e.emitMu.Unlock()
	seq := e.log.markExited(code, denied)
	e.setState(stateExited)
	if c := e.sess.conn(); c != nil {
		_ = c.Send(e.sess.sends, wire.AppendExitedNotification(rpc.AcquireFrame(), e.qid, seq, code, denied), true)
	}
}

// markExited records the exit like emitExited but holds its notification
// back: it returns the encoded process/exited (a pooled frame) for
// emitClosed to send together with process/closed. Only for a process
// whose output has ended, so that no output can come between them.
func (e *entry) markExited(code int, denied bool) []byte {
	e.emitMu.Lock()
	defer e.emitMu.Unlock()
	seq := e.log.markExited(code, denied)
	e.setState(stateExited)
	return wire.AppendExitedNotification(rpc.AcquireFrame(), e.qid, seq, code, denied)
}

// emitClosed publishes the close. exited, if not nil, is the process/exited
// that markExited held back: both leave in one write where the transport
// allows, exited first, and with the ends of other processes that meet
// them behind a write in flight (rpc.Conn.SendJoined: a terminate-all ends
// many at once; a lone end is not delayed).
func (e *entry) emitClosed(exited []byte) {
	e.emitMu.Lock()
	defer e.emitMu.Unlock()
	seq := e.log.markClosed()
	e.setState(stateClosed)
	c := e.sess.conn()
	switch {
	case c == nil:
		if exited != nil {
			rpc.ReleaseFrame(exited)
		}
	case exited != nil:
		_ = c.SendJoined(e.sess.sends, true, exited, wire.AppendClosedNotification(rpc.AcquireFrame(), e.qid, seq))
	default:
		_ = c.SendJoined(e.sess.sends, true, wire.AppendClosedNotification(rpc.AcquireFrame(), e.qid, seq))
	}
}

// rememberWrite records a write id and reports whether it was new.
func (e *entry) rememberWrite(id string) bool {
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	if e.writeIDs == nil {
		e.writeIDs = map[string]struct{}{}
	}
	if _, ok := e.writeIDs[id]; ok {
		return false
	}
	e.writeIDs[id] = struct{}{}
	e.writeOrder = append(e.writeOrder, id)
	if len(e.writeOrder) > maxWriteIDs {
		delete(e.writeIDs, e.writeOrder[0])
		e.writeOrder = e.writeOrder[1:]
	}
	return true
}

// appendBase64 is the wire.Base64Appender of the process notifications. It
// uses the SIMD encoder of segmentio/asm, about ten times faster than
// encoding/base64 on AVX2 machines: encoding is most of the CPU time of a
// pipe stream.
func appendBase64(b, data []byte) []byte {
	n := fastb64.StdEncoding.EncodedLen(len(data))
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), len(b)+n+16)
		copy(nb, b)
		b = nb
	}
	fastb64.StdEncoding.Encode(b[len(b):len(b)+n], data)
	return b[:len(b)+n]
}
