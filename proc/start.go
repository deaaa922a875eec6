package proc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/sandbox"
	"github.com/codexec/codex/wire"
)

// start handles process/start (protocol.md §6.5). The response is queued
// before the process's first notification: emitters wait on entry.started,
// which is closed only after Respond.
func start(_ context.Context, h *connHandler, req *rpc.Request, p *wire.StartParams) (any, error) {
	if len(p.Argv) == 0 {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "argv must not be empty")
	}
	var rows, cols uint16
	if p.Size != nil {
		if !p.TTY {
			return nil, rpc.Errorf(rpc.CodeInvalidParams, "size requires tty: true")
		}
		if p.Size.Rows == 0 || p.Size.Cols == 0 {
			return nil, rpc.Errorf(rpc.CodeInvalidParams, "size rows and cols must be greater than 0")
		}
		rows, cols = p.Size.Rows, p.Size.Cols
	}
	env := BuildEnv(h.reg.cfg.BaseEnv, p.EnvPolicy, p.Env)
	sandboxType := "none"
	var plan *sandbox.Plan
	if hasSandbox(p.Sandbox) {
		// Any sandbox object reports linuxSeccomp, as the reference does,
		// even when the plan turns out to enforce nothing (protocol.md §8.2).
		sandboxType = "linuxSeccomp"
		var err error
		if plan, env, err = processPlan(p.Sandbox, p.Cwd.Native, env); err != nil {
			return nil, err
		}
	}

	s := h.session()
	cfg := &h.reg.cfg
	e := &entry{
		id: p.ProcessID, qid: wire.QuoteID(p.ProcessID), sess: s,
		log:       newEventLog(cfg.RetainedBytes, DefaultRetainedChunks),
		started:   make(chan struct{}),
		sandboxed: sandboxType != "none",
	}
	if plan != nil {
		// Handles on the protected names and the shared placeholders are
		// taken now, at plan time (the plan records their identities).
		e.protect = h.reg.placeholders.guard(plan, s.log)
	}
	s.mu.Lock()
	switch {
	case s.ended:
		s.mu.Unlock()
		e.protect.release()
		return nil, wire.ErrStartCancelled(p.ProcessID)
	case s.procs[p.ProcessID] != nil:
		s.mu.Unlock()
		e.protect.release()
		return nil, wire.ErrProcessExists(p.ProcessID)
	case s.live >= cfg.MaxProcesses:
		s.mu.Unlock()
		e.protect.release()
		return nil, wire.ErrTooManyProcesses(cfg.MaxProcesses)
	}
	s.procs[p.ProcessID] = e
	s.live++
	s.mu.Unlock()

	spec := Spec{
		Argv: p.Argv, Dir: p.Cwd.Native, TTY: p.TTY, Rows: rows, Cols: cols, PipeStdin: p.PipeStdin,
		Env: env, Sandbox: plan,
	}
	if p.Arg0 != nil {
		spec.Arg0 = *p.Arg0
	}
	proc, err := Start(spec, e.emit, Options{Tree: h.reg.tree, Logger: s.log, Credit: s.credit})
	if err != nil {
		s.mu.Lock()
		if s.procs[p.ProcessID] == e {
			delete(s.procs, p.ProcessID)
		}
		s.live--
		s.mu.Unlock()
		e.protect.release()
		return nil, errSpawn(err)
	}
	e.p.Store(proc)
	e.setState(stateRunning)
	h.reg.wg.Add(1)
	go func() {
		defer h.reg.wg.Done()
		e.watch(proc)
	}()
	s.mu.Lock()
	ended := s.ended
	s.mu.Unlock()
	if e.cancelled.Load() || ended {
		e.kill(false, 0)
		close(e.started)
		return nil, wire.ErrStartCancelled(p.ProcessID)
	}
	_ = h.c.Respond(req.ID, wire.StartResult{ProcessID: p.ProcessID, SandboxType: sandboxType}, nil)
	close(e.started)
	return nil, rpc.ErrAsync
}

func hasSandbox(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && !bytes.Equal(raw, []byte("null"))
}

// processPlan resolves the sandbox object of process/start into the plan
// the helper enforces, or nil when the profile restricts nothing. It also
// returns the child environment, with CODEX_SANDBOX_NETWORK_DISABLED=1 when
// the network is off (protocol.md §7.3).
func processPlan(raw json.RawMessage, cwd string, env []string) (*sandbox.Plan, []string, error) {
	sb, err := sandbox.ParseSandbox(raw)
	if err != nil {
		return nil, nil, errProcessSandbox(err)
	}
	tmp, _ := envLookup(env, "TMPDIR")
	plan, err := sandbox.Resolve(sb.Permissions, sandbox.NewContext(sb, cwd, tmp), sandbox.PurposeProcess)
	if errors.Is(err, sandbox.ErrSymlinkCrossing) {
		// The command runs and fails with the reason on stderr, as with the
		// reference (sandbox.md §7 item 14).
		return &sandbox.Plan{Refusal: err.Error()}, env, nil
	}
	if err != nil {
		return nil, nil, errProcessSandbox(err)
	}
	if plan.NetworkDisabled {
		if _, ok := envLookup(env, "CODEX_SANDBOX_NETWORK_DISABLED"); !ok {
			env = append(env, "CODEX_SANDBOX_NETWORK_DISABLED=1")
		}
	}
	if !plan.Enforces() {
		return nil, env, nil
	}
	if err := sandbox.Available(); err != nil {
		return nil, nil, wire.ErrSandboxUnenforceable()
	}
	return &plan, env, nil
}
