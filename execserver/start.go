package execserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/codexec/codex/netproxy"
	"github.com/codexec/codex/proc"
	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/sandbox"
	"github.com/codexec/codex/wire"
	"go.uber.org/zap"
)

// start handles process/start (docs/protocol.md §6.5). The response is queued
// before the process's first notification: emitters wait on entry.started,
// which is closed only after Respond.
//
// The walk is one way: the environment and the sandbox plan are prepared
// here (BuildEnv, processPlan: sandbox.Prepare), the plan's host state is
// held (guardPlan), then proc.Start looks the program up in the child's
// PATH and forks it through the plan's launcher (the sandbox helper);
// nothing comes back to this package before the process runs.
//
// A start answered with an error is logged at info with the error and
// counted; one that runs is logged by startProcess.
func start(ctx context.Context, h *connHandler, req *rpc.Request, p *wire.StartParams) (any, error) {
	res, err := startProcess(ctx, h, req, p, time.Now())
	if err != nil && !errors.Is(err, rpc.ErrAsync) {
		h.reg.cfg.Metrics.StartFailed()
		h.session().log.Info("process start failed", zap.String("kind", kindProcessStart), zap.String("processId", p.ProcessID), zap.String("argv0", argv0(p.Argv)), zap.Error(err))
	}
	return res, err
}

// startProcess is start, for a request received at t0.
func startProcess(_ context.Context, h *connHandler, req *rpc.Request, p *wire.StartParams, t0 time.Time) (any, error) {
	if len(p.Argv) == 0 {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "argv must not be empty")
	}
	rows, cols, err := startSize(p)
	if err != nil {
		return nil, err
	}
	env := proc.BuildEnv(h.reg.cfg.BaseEnv, p.EnvPolicy, p.Env)
	var proxy *netproxy.Settings
	var policy *netproxy.Policy
	if p.NetworkProxy != nil {
		// A proxy always isolates the command, whatever
		// enforceManagedNetwork says (docs/sandbox.md §9).
		set, pol, err := startNetworkProxy(p.NetworkProxy)
		if err != nil {
			return nil, err
		}
		proxy, policy = &set, pol
	}
	sandboxType := "none"
	var plan *sandbox.Plan
	if hasSandbox(p.Sandbox) || proxy != nil {
		// Any sandbox object reports linuxSeccomp, as the reference does,
		// even when the plan turns out to enforce nothing (docs/protocol.md §8.2).
		sandboxType = "linuxSeccomp"
		if plan, env, err = processPlan(p.Sandbox, p.Cwd.Native, env, h.reg.cfg.InheritPIDNamespace, proxy); err != nil {
			return nil, err
		}
	}

	s := h.session()
	cfg := &h.reg.cfg
	ctx, cancel := context.WithCancelCause(s.ctx)
	e := &entry{
		id: p.ProcessID, qid: wire.QuoteID(p.ProcessID), sess: s,
		log:       newEventLog(cfg.RetainedBytes, DefaultRetainedChunks),
		started:   make(chan struct{}),
		sandboxed: sandboxType != "none",
		argv0:     p.Argv[0], tty: p.TTY, startedAt: t0,
		ctx: ctx, cancel: cancel, later: newMailbox(),
	}
	if plan != nil {
		// Handles on the protected names and the shared placeholders are
		// taken now, at plan time (the plan records their identities).
		e.protect = guardPlan(plan, s.log)
	}
	if err := s.admit(p.ProcessID, e, cfg.MaxProcesses); err != nil {
		e.protect.Release()
		cancel(nil)
		return nil, err
	}

	sl := newLauncher(plan, s.log)
	spec := proc.Spec{
		Argv: p.Argv, Dir: p.Cwd.Native, TTY: p.TTY, Rows: rows, Cols: cols, PipeStdin: p.PipeStdin,
		Env: env, Launcher: procLauncher(sl),
	}
	if p.Arg0 != nil {
		spec.Arg0 = *p.Arg0
	}
	pr, err := proc.Start(spec, e.emit, proc.Options{Tree: h.reg.tree, Logger: s.log, Credit: s.credit})
	var proxyErr error
	if plan != nil && plan.Proxy != nil {
		// Always called: it closes the control socket, even after a
		// failed start.
		hooks := proxyHooks{decided: s.decisionNotifier(p.ProcessID)}
		if t := p.NetworkProxy.PolicyDecisionTimeoutMs; t != nil {
			hooks.review = s.reviewer(p.ProcessID, time.Duration(*t)*time.Millisecond)
		}
		e.proxy, proxyErr = serveProxy(sl, policy, hooks, &h.reg.upstreams, s.log)
	}
	if err != nil {
		s.unadmit(p.ProcessID, e)
		e.protect.Release()
		e.proxy.close()
		cancel(nil)
		return nil, errSpawn(err)
	}
	e.p.Store(pr)
	e.setState(stateRunning)
	h.reg.cfg.Metrics.ProcessStarted(time.Since(t0))
	s.log.Info("process started", zap.String("kind", kindProcessStart), zap.String("processId", p.ProcessID), zap.Int("pid", pr.Pid()),
		zap.String("argv0", e.argv0), zap.Bool("tty", e.tty), zap.Bool("sandboxed", e.sandboxed))
	h.reg.wg.Add(1)
	go func() {
		defer h.reg.wg.Done()
		e.watch(pr)
	}()
	if proxyErr != nil {
		// The helper runs no command without its proxy; one whose
		// listeners never reached us is killed.
		s.log.Error("network proxy failed; killing the process", zap.String("processId", p.ProcessID), zap.Error(proxyErr))
		e.stop(errProxyFailed)
	}
	if e.ctx.Err() != nil {
		// Terminated while starting, or the session ended: the watcher
		// kills the process for that cause.
		close(e.started)
		return nil, wire.ErrStartCancelled(p.ProcessID)
	}
	_ = h.c.Respond(req.ID, wire.StartResult{ProcessID: p.ProcessID, SandboxType: sandboxType}, nil)
	close(e.started)
	return nil, rpc.ErrAsync
}

// argv0 returns argv[0], or "" for an empty argv. Only it is logged: the
// arguments may hold secrets.
func argv0(argv []string) string {
	if len(argv) == 0 {
		return ""
	}
	return argv[0]
}

// startSize returns the terminal size of process/start: zero without a
// size, an invalid-params error for a size without a tty or with a zero
// dimension.
func startSize(p *wire.StartParams) (rows, cols uint16, err error) {
	if p.Size == nil {
		return 0, 0, nil
	}
	if !p.TTY {
		return 0, 0, rpc.Errorf(rpc.CodeInvalidParams, "size requires tty: true")
	}
	if p.Size.Rows == 0 || p.Size.Cols == 0 {
		return 0, 0, rpc.Errorf(rpc.CodeInvalidParams, "size rows and cols must be greater than 0")
	}
	return p.Size.Rows, p.Size.Cols, nil
}

// admit records e as the process id of s, counting it as live. It fails,
// recording nothing, once s has ended, when id is taken, or when s already
// has limit live processes.
func (s *Session) admit(id string, e *entry, limit int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.reg.isDraining():
		return wire.ErrShuttingDown()
	case s.ended && errors.Is(s.endCause, errSessionEnded):
		return wire.ErrSessionEnded(s.id)
	case s.ended:
		return wire.ErrStartCancelled(id)
	case s.procs[id] != nil:
		return wire.ErrProcessExists(id)
	case s.live >= limit:
		return wire.ErrTooManyProcesses(limit)
	}
	s.procs[id] = e
	s.live++
	s.unfinished++
	s.ran = true
	s.reg.procUp()
	return nil
}

// reserveLive counts a command/exec run among the live processes of the
// session, or refuses it at limit as admit refuses a process/start. A
// successful reserve is followed by releaseLive.
func (s *Session) reserveLive(limit int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.live >= limit {
		return wire.ErrTooManyProcesses(limit)
	}
	s.live++
	return nil
}

// releaseLive ends what reserveLive counted.
func (s *Session) releaseLive() {
	s.mu.Lock()
	s.live--
	s.mu.Unlock()
}

// unadmit undoes admit for a process that failed to start.
func (s *Session) unadmit(id string, e *entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.procs[id] == e {
		delete(s.procs, id)
	}
	s.live--
	s.unfinished--
	s.noteIdle()
	s.reg.procDown()
}

func hasSandbox(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && !bytes.Equal(raw, []byte("null"))
}

// processPlan resolves the sandbox object of process/start into the plan
// the helper enforces, or nil when the profile restricts nothing. It also
// returns the child environment, with CODEX_SANDBOX_NETWORK_DISABLED=1 when
// the network is off (docs/protocol.md §7.3).
//
// A proxy narrows the profile's network to the command's own proxy; without
// a sandbox object it applies to an otherwise unrestricted profile. A
// profile whose network is off ignores it: nothing gets out.
func processPlan(raw json.RawMessage, cwd string, env []string, inheritPID bool, proxy *netproxy.Settings) (*sandbox.Plan, []string, error) {
	sb, err := sandbox.ParseSandbox(raw)
	if err != nil {
		return nil, nil, errProcessSandbox(err)
	}
	if proxy != nil {
		if sb == nil {
			sb = &sandbox.Sandbox{Permissions: sandbox.DangerFullAccess(), Cwd: cwd}
		}
		sb.Permissions.Proxy = proxy
	}
	return planFor(sb, cwd, env, false, inheritPID)
}

// planFor prepares sb for a command run in cwd with the environment env
// (sandbox.Prepare: $TMPDIR is env's). With forceNetEnv,
// CODEX_SANDBOX_NETWORK_DISABLED=1 replaces a value the caller's env set
// (command/exec); otherwise such a value is kept (process/start).
// inheritPID is the server's --linux-sandbox-pid-namespace inherit
// (SessionConfig.InheritPIDNamespace).
func planFor(sb *sandbox.Sandbox, cwd string, env []string, forceNetEnv, inheritPID bool) (*sandbox.Plan, []string, error) {
	plan, err := sandbox.Prepare(sb, sandbox.Request{Cwd: cwd, Env: env, Purpose: sandbox.PurposeProcess, InheritPIDNamespace: inheritPID})
	if err != nil {
		return nil, nil, errProcessSandbox(err)
	}
	if plan != nil && plan.NetworkDisabled {
		if forceNetEnv {
			env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "CODEX_SANDBOX_NETWORK_DISABLED=") })
		}
		if _, ok := envLookup(env, "CODEX_SANDBOX_NETWORK_DISABLED"); !ok {
			env = append(env, "CODEX_SANDBOX_NETWORK_DISABLED=1")
		}
	}
	return plan, env, nil
}
