package execserver

import (
	"container/list"
	"context"
	"errors"
	"maps"
	"net"
	"sync"
	"time"

	"github.com/codexec/codex/config"
	"github.com/codexec/codex/metrics"
	"github.com/codexec/codex/netproxy"
	"github.com/codexec/codex/proc"
	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/sandbox"
	"github.com/codexec/codex/wire"
	"github.com/google/uuid"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// SessionConfig is the configuration of the sessions and their processes. Zero values mean
// the defaults given per field.
type SessionConfig struct {
	// SessionTTL is how long a detached session survives (default 80 s,
	// as the reference). Negative means 0: processes die with the connection.
	SessionTTL time.Duration
	// ExitedRetention is how long a closed process stays readable (80 s).
	ExitedRetention time.Duration
	// RetainedBytes caps the output retained per process (1 MiB).
	RetainedBytes int
	// MaxProcesses caps the live processes of one session (1024).
	MaxProcesses int
	// MaxSessions, when positive, caps the sessions held at once, attached
	// or detached. At the cap a new session takes the place of the one
	// detached longest among those that never ran a process; with none,
	// initialize refuses it (-32011). A resume is never refused. 0: no
	// limit.
	MaxSessions int
	// StdinParkBytes caps the bytes of one connection's process/write
	// calls that wait for room in a full stdin queue
	// (DefaultParkedStdinBytes); a write beyond it is refused.
	StdinParkBytes int64
	// ExecutorVersion is reported in environment/info ("0.169.0").
	ExecutorVersion string
	// BaseEnv is the server environment children inherit through envPolicy
	// (default: os.Environ()).
	BaseEnv []string
	// Limits apply to every process's cgroup leaf; zero fields mean no
	// limit (exec-server's flags set its defaults).
	Limits proc.Limits
	// Permissions are the configured permission profiles command/exec
	// resolves names against; nil means none (the default is ":read-only").
	Permissions *config.Permissions
	// InheritPIDNamespace runs sandboxed commands in the server's PID
	// namespace (--linux-sandbox-pid-namespace inherit): they see the
	// host's processes but may signal none outside their sandbox
	// (docs/sandbox.md §4.2). false: each gets its own, the default.
	InheritPIDNamespace bool
	// Metrics receives the counts of processes and sessions; nil records
	// nothing.
	Metrics *metrics.Metrics
}

func (c *SessionConfig) setDefaults() {
	if c.SessionTTL == 0 {
		c.SessionTTL = 80 * time.Second
	}
	if c.SessionTTL < 0 {
		c.SessionTTL = 0
	}
	if c.ExitedRetention <= 0 {
		c.ExitedRetention = 80 * time.Second
	}
	if c.RetainedBytes <= 0 {
		c.RetainedBytes = DefaultRetainedBytes
	}
	if c.MaxProcesses <= 0 {
		c.MaxProcesses = 1024
	}
	if c.StdinParkBytes <= 0 {
		c.StdinParkBytes = DefaultParkedStdinBytes
	}
	if c.ExecutorVersion == "" {
		c.ExecutorVersion = "0.169.0"
	}
}

// Registry holds every session of the server and owns every process
// goroutine. It is safe for concurrent use.
type Registry struct {
	cfg  SessionConfig
	log  *zap.Logger
	tree *proc.TreeKiller

	mu       sync.Mutex
	sessions map[string]*Session // guarded by mu
	closed   bool                // guarded by mu
	// The detached sessions that never ran a process, longest detached
	// first: the ones a new session may replace at MaxSessions. Guarded
	// by mu.
	emptyDetached list.List

	wg sync.WaitGroup // process watchers

	drain drainState // see drain.go

	// upstreams holds the live upstream connections of the commands'
	// network proxies, which CheckPeer refuses.
	upstreams netproxy.Upstreams
}

// NewRegistry returns an empty registry. Shutdown must be called to kill the
// remaining processes and release the tree killer.
func NewRegistry(cfg SessionConfig, logger *zap.Logger) (*Registry, error) {
	cfg.setDefaults()
	if logger == nil {
		logger = zap.NewNop()
	}
	tree, err := proc.NewLimitedTreeKiller(logger, cfg.Limits, sandbox.HelperName)
	if err != nil {
		return nil, err
	}
	logger.Debug("process tree killing", zap.String("mode", tree.Mode()))
	return &Registry{cfg: cfg, log: logger, tree: tree, sessions: map[string]*Session{}, drain: newDrainState()}, nil
}

var (
	errUnknownSession  = errors.New("unknown session")
	errSessionAttached = errors.New("session already attached")
	errSessionLimit    = errors.New("session limit reached")
)

// create makes a new session attached to c. At the session limit it
// first ends the session detached longest among those that never ran a
// process (there is nothing in it to resume but its id), and refuses
// only when there is none.
func (r *Registry) create(c *rpc.Conn) (*Session, error) {
	ctx, cancel := context.WithCancelCause(context.Background())
	s := &Session{id: uuid.NewString(), reg: r, ctx: ctx, cancel: cancel, procs: map[string]*entry{}, idle: make(chan struct{}), credit: proc.NewOutputCredit(proc.DefaultOutputCredits)}
	s.sends, s.stopSends = context.WithCancel(context.Background())
	s.log = r.log.With(zap.String("session", s.id))
	s.attached.Store(c)
	r.mu.Lock()
	if r.closed || r.isDraining() {
		r.mu.Unlock()
		cancel(errShutdown)
		return nil, wire.ErrShuttingDown()
	}
	var evicted *Session
	if r.cfg.MaxSessions > 0 && len(r.sessions) >= r.cfg.MaxSessions {
		evicted = r.firstEmptyDetachedLocked()
		if evicted == nil {
			r.mu.Unlock()
			cancel(errSessionLimit)
			r.cfg.Metrics.SessionRefused()
			r.log.Info("session refused: limit reached", zap.Int("max_sessions", r.cfg.MaxSessions))
			return nil, errSessionLimit
		}
		r.unlistLocked(evicted)
		delete(r.sessions, evicted.id)
		evicted.expiry.Stop()
		evicted.expiry = nil
	}
	r.sessions[s.id] = s
	r.mu.Unlock()
	if evicted != nil {
		r.cfg.Metrics.SessionEnded(true)
		evicted.log.Debug("empty detached session ended for a new one at the session limit", zap.Int("max_sessions", r.cfg.MaxSessions))
		evicted.end(errSessionEvicted)
	}
	r.cfg.Metrics.SessionCreated()
	s.log.Debug("session created")
	return s, nil
}

// firstEmptyDetachedLocked returns the session detached longest among the
// detached ones that never ran a process, or nil. A process/start still in
// flight when its connection dropped may have admitted a process after the
// detach listed the session: such sessions are dropped from the list here.
// Called with r.mu held.
func (r *Registry) firstEmptyDetachedLocked() *Session {
	for e := r.emptyDetached.Front(); e != nil; e = r.emptyDetached.Front() {
		s := e.Value.(*Session)
		if !s.ranProcesses() {
			return s
		}
		r.unlistLocked(s)
	}
	return nil
}

// unlistLocked takes s off the list of empty detached sessions, if it is
// on it. Called with r.mu held.
func (r *Registry) unlistLocked(s *Session) {
	if s.emptyElem != nil {
		r.emptyDetached.Remove(s.emptyElem)
		s.emptyElem = nil
	}
}

// resume attaches c to a detached session.
func (r *Registry) resume(id string, c *rpc.Conn) (*Session, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.isDraining() {
		return nil, wire.ErrShuttingDown()
	}
	s, ok := r.sessions[id]
	if !ok {
		return nil, errUnknownSession
	}
	if !s.attached.CompareAndSwap(nil, c) {
		return nil, errSessionAttached
	}
	if s.expiry != nil {
		s.expiry.Stop()
		s.expiry = nil
	}
	r.unlistLocked(s)
	r.cfg.Metrics.SessionResumed()
	s.log.Info("session resumed")
	return s, nil
}

// detach is called when c ends. The session's processes keep running until
// the TTL expires without a resume.
func (r *Registry) detach(s *Session, c *rpc.Conn) {
	r.mu.Lock()
	if !s.attached.CompareAndSwap(c, nil) {
		r.mu.Unlock()
		return // resumed elsewhere
	}
	if r.sessions[s.id] != s {
		r.mu.Unlock()
		s.stopSends() // ended by session/end or Shutdown: nobody reads any more
		return
	}
	if r.cfg.SessionTTL == 0 {
		delete(r.sessions, s.id)
		r.mu.Unlock()
		r.cfg.Metrics.SessionEnded(false)
		s.log.Log(s.endLevel(), "session ended with its connection (session TTL 0); killing its processes", zap.Int("processes_killed", s.treeSize()))
		s.end(errConnClosed)
		return
	}
	defer r.mu.Unlock()
	r.cfg.Metrics.SessionDetached()
	s.log.Debug("session detached", zap.Duration("ttl", r.cfg.SessionTTL))
	if !s.ranProcesses() {
		// Detached in order, so the list stays longest detached first;
		// nothing can start a process in s until a resume takes it off.
		s.emptyElem = r.emptyDetached.PushBack(s)
	}
	s.expiry = time.AfterFunc(r.cfg.SessionTTL, func() { r.expire(s) })
}

func (r *Registry) expire(s *Session) {
	r.mu.Lock()
	if s.attached.Load() != nil || r.sessions[s.id] != s {
		r.mu.Unlock()
		return
	}
	delete(r.sessions, s.id)
	s.expiry = nil
	r.unlistLocked(s)
	r.mu.Unlock()
	r.cfg.Metrics.SessionEnded(true)
	s.log.Log(s.endLevel(), "detached session expired; killing its processes", zap.Int("processes_killed", s.treeSize()))
	s.end(errSessionExpired)
}

// endWait bounds how long session/end waits for the watchers to close
// the killed processes before it answers.
const endWait = 5 * time.Second

// endByClient ends s at its client's request (session/end,
// docs/protocol.md §10.5): every process tree of the session is killed,
// leftovers included, the id is forgotten, and it returns once every
// process was closed (at most endWait). Ending an ended session does
// nothing.
func (r *Registry) endByClient(s *Session) {
	r.mu.Lock()
	if r.sessions[s.id] != s {
		r.mu.Unlock()
		return // ended already (by session/end or Shutdown)
	}
	delete(r.sessions, s.id)
	r.mu.Unlock()
	r.cfg.Metrics.SessionEnded(false)
	s.log.Log(s.endLevel(), "session ended by the client; killing its processes", zap.Int("processes_killed", s.treeSize()))
	s.end(errSessionEnded)
	t := time.NewTimer(endWait)
	defer t.Stop()
	select {
	case <-s.idle:
	case <-t.C:
		s.log.Warn("session/end: processes still closing", zap.Duration("waited", endWait))
	}
}

// endLevel is the level of the line that logs the end of s. A one-shot
// client leaves a session behind every time: only one that ran processes
// is worth an operator's attention.
func (s *Session) endLevel() zapcore.Level {
	if s.ranProcesses() {
		return zap.InfoLevel
	}
	return zap.DebugLevel
}

// Shutdown kills the processes of every session (SIGKILL to each tree) and
// waits for their goroutines. New sessions are refused afterwards.
func (r *Registry) Shutdown(ctx context.Context) error {
	r.mu.Lock()
	r.closed = true
	sessions := make([]*Session, 0, len(r.sessions))
	for _, s := range r.sessions {
		sessions = append(sessions, s)
		r.cfg.Metrics.SessionEnded(s.expiry != nil)
		if s.expiry != nil {
			s.expiry.Stop()
		}
	}
	r.sessions = map[string]*Session{}
	r.emptyDetached.Init()
	r.mu.Unlock()
	// The drain's kill and this one's, descendants and leftovers included;
	// a process the drain killed that is still exiting counts once.
	pids := treePids(sessions)
	if d := r.drain.killed.Load(); d != nil {
		maps.Copy(pids, *d)
	}
	killed := len(pids)
	r.log.Info("shutting down", zap.Int("sessions", len(sessions)), zap.Int("processes_killed", killed))
	for _, s := range sessions {
		s.end(errShutdown)
	}
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if cerr := r.tree.Close(); err == nil {
		err = cerr
	}
	return err
}

// CheckPeer returns nil if the TCP connection between local (our end) and
// remote may be served, and an error saying why not if its peer socket
// belongs to a process of one of our sandboxes (see proc.TreeKiller's
// CheckPeer) or is an upstream connection of a command's network proxy:
// that socket is the server's own, but the command chose where it goes
// (docs/sandbox.md §9.3). It is meant as wsserve.WebSocketServer.CheckPeer.
func (r *Registry) CheckPeer(local, remote net.Addr) error {
	if r.upstreams.Holds(local, remote) {
		return errors.New("peer is a sandboxed command's connection through its network proxy")
	}
	return r.tree.CheckPeer(local, remote)
}
