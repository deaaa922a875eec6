package execserver

import (
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/codexec/codex/netproxy"
	"github.com/codexec/codex/proc"
	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/sandbox"
	"github.com/codexec/codex/wire"
)

// commandExecDrain is how long the output readers get after the exit
// (docs/protocol.md §12.4).
const commandExecDrain = 2 * time.Second

// cmdExecs is the connection's table of addressable command/exec runs: ids
// are connection-scoped, and every run ends with the connection.
type cmdExecs struct {
	mu   sync.Mutex
	byID map[string]*cmdExec // guarded by mu
}

// cmdExec is one running command/exec.
type cmdExec struct {
	id          string
	pr          *proc.Process
	streamStdin bool
	tty         bool
	exited      chan struct{} // closed once the child exited (control answers wait)
	answered    chan struct{} // closed once the response was sent
	terminated  chan struct{} // closed by command/exec/terminate
	termOnce    sync.Once
	protect     *sandbox.HostGuard // the protected names of a sandboxed run; nil if none
	proxy       *commandProxy      // the run's managed network proxy; nil if none
	obs         execObs            // for the end line (command_exec_oplog.go)

	mu          sync.Mutex
	stdinClosed bool // guarded by mu
}

// claim registers id, or fails if it is active on this connection.
func (t *cmdExecs) claim(id string, e *cmdExec) *rpc.Error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.byID[id]; ok {
		return wire.ErrDuplicateCommandExec(id)
	}
	if t.byID == nil {
		t.byID = map[string]*cmdExec{}
	}
	t.byID[id] = e
	return nil
}

func (t *cmdExecs) release(id string, e *cmdExec) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byID[id] == e {
		delete(t.byID, id)
	}
}

func (t *cmdExecs) lookup(id string) *cmdExec {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byID[id]
}

// execLimits are the resolved cap and timeout of one run; negative means none.
type execLimits struct {
	cap     int64
	timeout time.Duration
}

func limitsOf(p *wire.CommandExecParams) execLimits {
	l := execLimits{cap: wire.CommandExecDefaultCap, timeout: wire.CommandExecDefaultTimeoutMs * time.Millisecond}
	switch {
	case p.DisableOutputCap:
		l.cap = -1
	case p.OutputBytesCap != nil:
		l.cap = int64(min(*p.OutputBytesCap, 1<<62))
	}
	switch {
	case p.DisableTimeout:
		l.timeout = -1
	case p.TimeoutMs != nil:
		l.timeout = time.Duration(min(*p.TimeoutMs, int64(24*365*time.Hour/time.Millisecond))) * time.Millisecond
	}
	return l
}

// commandExec handles command/exec (docs/protocol.md §12.2 to §12.4). The run answers
// asynchronously, so later requests of the connection are not held up.
func commandExec(_ context.Context, h *connHandler, req *rpc.Request) (any, error) {
	t0 := time.Now()
	p, pol, err := decodeCommandExec(h, req)
	if err != nil {
		return nil, err
	}
	if err := wire.ValidateCommandExec(p, h.experimental.Load()); err != nil {
		return nil, err
	}
	spec := execSpec(h, p)
	ep, rerr := resolveExecPolicy(p, pol, h.reg.cfg.Permissions, spec.Dir, serverCwd())
	if rerr != nil {
		return nil, rerr
	}
	if err := wire.ValidateCommandExecSize(p); err != nil {
		return nil, err
	}
	plan, err := sandboxSpec(ep, &spec, h.reg.cfg.InheritPIDNamespace, h.b.log)
	if err != nil {
		return nil, err
	}
	if h.reg.isDraining() {
		return nil, wire.ErrShuttingDown()
	}
	if p.TTY {
		p.StreamStdin, p.StreamStdoutStderr = true, true
	}
	if (p.StreamStdin || p.StreamStdoutStderr) && p.ProcessID == nil {
		return nil, rpc.Errorf(rpc.CodeInvalidRequest, "command/exec tty or streaming requires a client-supplied processId")
	}
	e := &cmdExec{streamStdin: p.StreamStdin, tty: p.TTY, exited: make(chan struct{}), answered: make(chan struct{}), terminated: make(chan struct{})}
	if p.ProcessID != nil {
		e.id = *p.ProcessID
		if err := h.cmds.claim(e.id, e); err != nil {
			return nil, err
		}
	}
	// A run is a live process of the session, as a process/start's is
	// (MaxProcesses).
	if err := h.session().reserveLive(h.reg.cfg.MaxProcesses); err != nil {
		if p.ProcessID != nil {
			h.cmds.release(e.id, e)
		}
		return nil, err
	}
	if plan != nil {
		e.protect = guardPlan(plan, h.b.log)
	}
	lim := limitsOf(p)
	out := newExecOutput(h.c, e.id, p.StreamStdoutStderr, lim.cap)
	out.metrics = h.reg.cfg.Metrics
	serr := ptyPreflight(spec)
	var pr *proc.Process
	if serr == nil {
		pr, serr = proc.Start(spec, out.add, proc.Options{Tree: h.reg.tree, Logger: h.b.log})
	}
	var proxyErr error
	if plan != nil && plan.Proxy != nil {
		// No review: an unlisted host is refused, as by the reference's
		// app-server (docs/sandbox.md §9.5). Always called: it closes the
		// control socket, even after a failed start.
		hooks := proxyHooks{decided: func(ev netproxy.Event) { h.reg.cfg.Metrics.ProxyDecision(ev.Allowed, ev.Reason, ev.Source) }}
		sl, _ := spec.Launcher.(*sandbox.Launcher)
		e.proxy, proxyErr = serveProxy(sl, ep.proxyPolicy, hooks, &h.reg.upstreams, h.b.log)
	}
	if serr == nil && proxyErr != nil {
		// The helper runs no command without its proxy; one whose
		// listeners never reached us is killed.
		h.b.log.Error("network proxy failed; killing the command", zap.Error(proxyErr))
		_ = pr.Kill()
	}
	if serr != nil {
		h.session().releaseLive()
		e.proxy.close()
		e.protect.Release()
		if p.ProcessID != nil {
			h.cmds.release(e.id, e)
		}
		return nil, spawnError(serr)
	}
	e.pr = pr
	h.execStarted(e, &spec, t0)
	h.c.Go(func(ctx context.Context) {
		h.runCommandExec(ctx, req.ID, e, out, lim.timeout, p.ProcessID != nil)
	})
	return nil, rpc.ErrAsync
}

// decodeCommandExec decodes the params, sandboxPolicy included, then
// checks the handshake.
func decodeCommandExec(h *connHandler, req *rpc.Request) (*wire.CommandExecParams, *sandbox.Policy, error) {
	p, derr := wire.DecodeCommandExecParams(req.Params)
	if derr != nil {
		return nil, nil, derr
	}
	var pol *sandbox.Policy
	if p.SandboxPolicy != nil {
		parsed, perr := parseExecPolicy(p.SandboxPolicy)
		if perr != nil {
			return nil, nil, perr
		}
		pol = &parsed
	}
	if err := h.check("command/exec"); err != nil {
		return nil, nil, err
	}
	return p, pol, nil
}

// serverCwd is the server's working directory, which anchors relative
// cwds, sandbox policies and the default permissions.
func serverCwd() string {
	cwd, _ := os.Getwd()
	return cwd
}

// execSpec builds the process spec: the cwd joined onto the server's, the
// env overlay on the server's environment (nil unsets), pipes or a PTY.
func execSpec(h *connHandler, p *wire.CommandExecParams) proc.Spec {
	cwd := serverCwd()
	if p.Cwd != nil {
		cwd = filepath.Join(cwd, *p.Cwd)
		if filepath.IsAbs(*p.Cwd) {
			cwd = filepath.Clean(*p.Cwd)
		}
	}
	env := make([]string, 0, len(h.reg.cfg.BaseEnv)+len(p.Env))
	for _, kv := range h.reg.cfg.BaseEnv {
		name, _, _ := strings.Cut(kv, "=")
		if _, over := p.Env[name]; !over {
			env = append(env, kv)
		}
	}
	for name, v := range p.Env {
		if v != nil {
			env = append(env, name+"="+*v)
		}
	}
	spec := proc.Spec{Argv: p.Command, Dir: cwd, Env: env, TTY: p.TTY, PipeStdin: p.StreamStdin}
	if p.Size != nil {
		spec.Rows, spec.Cols = p.Size.Rows, p.Size.Cols
	}
	return spec
}

// spawnError maps a start failure to -32603 "failed to spawn command: …".
func spawnError(err error) *rpc.Error {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return wire.ErrCommandExecSpawn(wire.OSErrorMessage(errno))
	}
	return wire.ErrCommandExecSpawn(err.Error())
}

// runCommandExec waits for the run to end (exit, timeout, terminate or the
// connection's close), gives the readers the drain, and answers.
func (h *connHandler) runCommandExec(ctx context.Context, id rpc.ID, e *cmdExec, out *execOutput, timeout time.Duration, named bool) {
	defer close(e.answered)
	// The run stops counting against MaxProcesses before its response,
	// so that a client that has it may start another.
	counted := true
	uncount := func() {
		if counted {
			counted = false
			h.session().releaseLive()
		}
	}
	defer uncount()
	if named {
		// Released before the response: once the client has it, the id
		// is free again.
		defer h.cmds.release(e.id, e)
	}
	var deadline <-chan time.Time
	if timeout >= 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
	}
	defer h.reg.procDown() // after the answer: a drain waits for it
	timedOut, cause, gone := h.awaitCommandExec(ctx, e, deadline)
	if gone {
		h.closeExec(e) // the connection is gone: kill, and answer nobody
		e.protect.Release()
		h.execEnded(e, out, e.pr.ExitCode(), execCauseConnClosed)
		return
	}
	<-e.pr.Exited()
	e.execExited()
	close(e.exited)
	drain := time.NewTimer(commandExecDrain)
	select {
	case <-e.pr.OutputDone():
	case <-drain.C:
	case <-ctx.Done():
	}
	drain.Stop()
	settled := settledRun(e, timedOut)
	if settled {
		defer h.closeExec(e) // after the response: nothing left to kill or deliver
	} else {
		h.closeExec(e) // kills what is left of the tree; no output after this
		e.protect.Release()
	}
	code := e.pr.ExitCode()
	if timedOut {
		code = wire.CommandExecTimeoutExitCode
	}
	if settled {
		// Counted before the response and logged after it (before
		// Close): the log line is not part of the round trip.
		h.execClosed(e)
		defer h.execLogEnd(e, out, code, cause)
	} else {
		h.execEnded(e, out, code, cause)
	}
	if ctx.Err() != nil {
		return
	}
	if named {
		h.cmds.release(e.id, e)
	}
	uncount()
	if err := h.c.Respond(id, out.result(code), nil); err != nil {
		h.b.log.Debug("command/exec response not sent", zap.Error(err))
	}
}

// awaitCommandExec waits for the run's exit, its timeout (killed), its
// command/exec/terminate (killed) or the connection's end (gone). The
// drain of a stopping server sends SIGTERM to the process group and goes
// on waiting (docs/operations.md §5).
func (h *connHandler) awaitCommandExec(ctx context.Context, e *cmdExec, deadline <-chan time.Time) (timedOut bool, cause string, gone bool) {
	drain := h.reg.draining()
	for {
		select {
		case <-e.pr.Exited():
			return false, "", false
		case <-deadline:
			_ = e.pr.Kill()
			return true, execCauseTimeout, false
		case <-e.terminated:
			_ = e.pr.Kill()
			return false, execCauseTerminate, false
		case <-drain:
			drain = nil
			_ = e.pr.Signal(syscall.SIGTERM)
		case <-ctx.Done():
			return false, "", true
		}
	}
}

// decodeDelta decodes deltaBase64 strictly (standard alphabet, padding),
// with messages in the style of the reference's decoder.
func decodeDelta(s string) ([]byte, *rpc.Error) {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	for i := 0; i < len(s); i++ {
		if s[i] != '=' && strings.IndexByte(alphabet, s[i]) < 0 {
			return nil, rpc.Errorf(rpc.CodeInvalidParams, "invalid deltaBase64: Invalid symbol %d, offset %d.", s[i], i)
		}
	}
	if len(s)%4 == 1 {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "invalid deltaBase64: Invalid input length: %d", len(s))
	}
	body := strings.TrimRight(s, "=")
	if len(s)%4 != 0 || len(s)-len(body) > 2 || strings.Contains(body, "=") {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "invalid deltaBase64: Invalid padding")
	}
	// The last symbol of a partial quantum must not carry bits that the
	// decoded bytes drop.
	if rem := len(body) % 4; rem >= 2 {
		last := body[len(body)-1]
		if bits := strings.IndexByte(alphabet, last); bits&(1<<(2*(4-rem))-1) != 0 {
			return nil, rpc.Errorf(rpc.CodeInvalidParams, "invalid deltaBase64: Invalid last symbol %d, offset %d.", last, len(body)-1)
		}
	}
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "invalid deltaBase64: Invalid padding")
	}
	return b, nil
}

// closeExec closes the process of a command/exec run. What its tree left
// running (`cmd >log &`) lives as long as the connection's session
// (docs/protocol.md §7.8).
func (h *connHandler) closeExec(e *cmdExec) {
	h.session().adopt(e.pr.CloseLeftovers())
	e.proxy.close()
}

// settledRun reports whether a command/exec run needs nothing more from
// Process.Close before its response: the child exited by itself (no
// timeout), every output stream reached EOF, so no output can follow and
// Close kills nothing, and no host guard waits for the tree to end. Then the
// response goes out first and the process's cleanup (joining its
// goroutines, removing its cgroup leaf) follows it, off the round trip.
func settledRun(e *cmdExec, timedOut bool) bool {
	if timedOut || e.protect != nil {
		return false
	}
	select {
	case <-e.pr.OutputDone():
		return true
	default:
		return false
	}
}
