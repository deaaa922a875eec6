package agenttool

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Config configures Tools. The zero value of each member is documented.
type Config struct {
	// Backend starts processes. Nil: every call fails with ErrUnavailable.
	Backend Backend
	// Sink receives the events. Nil: events are dropped.
	Sink EventSink
	// Clock is the time source. Nil: RealClock.
	Clock Clock
	// Shell is the user's shell. "": "/bin/bash".
	Shell string
	// AllowLoginShell allows `login`; it is also the default of `login`.
	AllowLoginShell bool
	// BaseEnv is the child's base environment before the forced variables
	// (docs/client.md §2). Nil: empty.
	BaseEnv map[string]string
	// ServerEnv is the server-side base environment; only variables that
	// differ from it are sent in env (docs/client.md §5.1). Nil: empty, so everything is
	// sent and nothing is excluded.
	ServerEnv map[string]string
	// CodexEnv holds the CODEX_* variables of docs/client.md §2 (CODEX_THREAD_ID,
	// CODEX_SESSION_ID, CODEX_VERSION, …), applied after the forced ones.
	// CODEX_TOOL_CALL_ID is always set from the call id.
	CodexEnv map[string]string
	// ThreadID goes into process/start metadata.
	ThreadID string
	// MaxBackgroundTerminalTimeout caps empty polls. 0: 300 s; never below 5 s.
	MaxBackgroundTerminalTimeout time.Duration
	// TurnPolicy truncates End's formatted_output. Zero: Tokens(10 000).
	TurnPolicy *TruncationPolicy
	// DeterministicIDs hands out 1000, 1001, … instead of random ids.
	DeterministicIDs bool
	// ParseCommand builds parsed_cmd. Nil: one "unknown" command.
	ParseCommand func(argv []string) json.RawMessage
}

// Tools implements the exec_command and write_stdin tools over a Backend
// (docs/client.md §4, §5). All methods are safe for concurrent use. Background processes
// survive calls and turns; call Close at session shutdown, which terminates
// them and waits for the goroutines Tools started.
type Tools struct {
	cfg    Config
	clock  Clock
	store  *processStore
	ctx    context.Context // cancelled by Close; used for cleanup calls
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New returns Tools for cfg.
func New(cfg Config) *Tools {
	if cfg.Clock == nil {
		cfg.Clock = RealClock{}
	}
	if cfg.Shell == "" {
		cfg.Shell = "/bin/bash"
	}
	if cfg.MaxBackgroundTerminalTimeout == 0 {
		cfg.MaxBackgroundTerminalTimeout = DefaultMaxBackgroundTerminalTimeout
	}
	cfg.MaxBackgroundTerminalTimeout = max(cfg.MaxBackgroundTerminalTimeout, MinEmptyYieldTime)
	ctx, cancel := context.WithCancel(context.Background())
	return &Tools{cfg: cfg, clock: cfg.Clock, store: newProcessStore(cfg.DeterministicIDs), ctx: ctx, cancel: cancel}
}

// ExecCommandCall is one exec_command invocation.
type ExecCommandCall struct {
	// CallID is the tool call id; every event of the process carries it.
	CallID string
	// TurnID is copied into Begin and End.
	TurnID string
	// Cwd is the turn cwd; a relative workdir resolves against it.
	Cwd string
	// Params is the model's arguments.
	Params ExecCommandParams
	// Sandbox is the resolved sandbox object for process/start, or nil. A
	// sandboxed run trusts the server's sandboxDenied flag.
	Sandbox json.RawMessage
	// Env overrides Config.BaseEnv for this call when non-nil.
	Env map[string]string
}

// ExecCommand runs exec_command (docs/client.md §5.2). A sandbox denial is reported in
// the output's Denied member, not as an error. Errors are
// *CreateProcessError, *ProcessFailedError, ErrMissingCommandLine,
// ErrLoginShellDisabled or ErrUnavailable; render them with
// ExecCommandFailedMessage.
func (t *Tools) ExecCommand(ctx context.Context, call ExecCommandCall) (*ExecCommandOutput, error) {
	if t.cfg.Backend == nil {
		return nil, ErrUnavailable
	}
	prm := call.Params
	if prm.Cmd == "" {
		return nil, ErrMissingCommandLine
	}
	shell, login, err := t.shellFor(prm)
	if err != nil {
		return nil, err
	}
	start := t.clock.Now()
	id := t.store.reserve()
	info := &callInfo{
		callID: call.CallID, turnID: call.TurnID,
		processID: fmt.Sprint(id),
		cwd:       resolveCwd(call.Cwd, prm.Workdir),
		command:   ShellArgv(shell, prm.Cmd, login),
	}
	if t.cfg.ParseCommand != nil {
		info.parsedCmd = t.cfg.ParseCommand(info.command)
	} else {
		info.parsedCmd = defaultParsedCmd(info.command)
	}
	p, err := t.spawn(ctx, id, info, call)
	if err != nil {
		t.store.release(id)
		return nil, err
	}
	maxTokens := maxOutputTokens(prm.MaxOutputTokens)

	// docs/client.md §5.1 step 5: a denial seen within the early-exit grace is a failed
	// spawn: no Begin and no End.
	if exited, code, denied, failure := p.state(); exited && failure == "" && denied && call.Sandbox != nil {
		p.openGate(false)
		raw := p.snapshot()
		t.release(id, p)
		return t.deniedOutput(start, info, raw, code, maxTokens), nil
	}

	t.emit(info.begin())
	p.openGate(true)
	e := &storeEntry{id: id, proc: p, call: info, tty: prm.TTY, start: start, lastUsed: start}
	stored := false
	if !p.hasExited() {
		t.insert(e)
		stored = true
	}
	raw := p.collect(ctx, start.Add(ExecYield(prm.YieldTimeMs)))

	exited, code, denied, failure := p.state()
	if failure != "" {
		if !stored {
			t.emitEnd(e)
		}
		t.release(id, p)
		return nil, &ProcessFailedError{Message: failure}
	}
	out := t.output(start, info, raw, maxTokens)
	out.ExitCode = code
	switch {
	case stored && !exited:
		out.SessionID = &id
		return out, nil
	case !stored:
		t.emitEnd(e)
	}
	t.release(id, p)
	if denied && call.Sandbox != nil {
		out.Denied = deniedError(LossyUTF8(raw), code)
	}
	return out, nil
}

// shellFor returns the shell of an exec_command call and whether it runs
// as a login shell: the call's choices, else the configured ones. Asking
// for a login shell when AllowLoginShell is off is ErrLoginShellDisabled.
func (t *Tools) shellFor(prm ExecCommandParams) (shell string, login bool, err error) {
	login = t.cfg.AllowLoginShell
	if prm.Login != nil {
		if *prm.Login && !t.cfg.AllowLoginShell {
			return "", false, ErrLoginShellDisabled
		}
		login = *prm.Login
	}
	shell = t.cfg.Shell
	if prm.Shell != "" {
		shell = prm.Shell
	}
	return shell, login, nil
}

// spawn builds the request, starts the process and waits up to
// EarlyExitGrace for an early exit (docs/client.md §5.1).
func (t *Tools) spawn(ctx context.Context, id int, info *callInfo, call ExecCommandCall) (*execProcess, error) {
	desired := maps.Clone(t.cfg.BaseEnv)
	if call.Env != nil {
		desired = maps.Clone(call.Env)
	}
	if desired == nil {
		desired = map[string]string{}
	}
	ApplyForcedEnv(desired)
	maps.Copy(desired, t.cfg.CodexEnv)
	if call.CallID != "" {
		desired["CODEX_TOOL_CALL_ID"] = call.CallID
	}
	env, policy := WireEnv(t.cfg.ServerEnv, desired)
	req := StartRequest{
		ProcessID: fmt.Sprintf("%d-%s", id, uuid.NewString()),
		Argv:      info.command, Cwd: info.cwd, Env: env, EnvPolicy: policy,
		TTY: call.Params.TTY, Sandbox: call.Sandbox,
		ThreadID: t.cfg.ThreadID, ToolCallID: call.CallID,
	}
	h, err := t.cfg.Backend.Start(ctx, req)
	if err != nil {
		return nil, &CreateProcessError{Err: err}
	}
	p := newExecProcess(h, t.clock, info.callID, t.cfg.Sink)
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		p.run()
	}()
	if !p.hasExited() {
		timer := t.clock.NewTimer(EarlyExitGrace)
		select {
		case <-p.exitSignal:
		case <-timer.C():
		case <-ctx.Done():
		}
		timer.Stop()
	}
	return p, nil
}

// insert stores e, prunes one entry if the store is full, warns the model
// past WarningProcesses, and starts the exit watcher (docs/client.md §8.4, §9).
func (t *Tools) insert(e *storeEntry) {
	pruned, n := t.store.insert(e)
	if pruned != nil {
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			pruned.proc.terminate(t.ctx)
		}()
	}
	if n >= WarningProcesses {
		t.emit(&ModelWarningEvent{Message: processCountWarning(n)})
	}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		<-e.proc.drained
		t.emitEnd(e)
	}()
}

// emitEnd emits the entry's one End event once the output drained (docs/client.md §8.3).
func (t *Tools) emitEnd(e *storeEntry) {
	e.endOnce.Do(func() {
		transcript := e.proc.transcript()
		_, code, _, failure := e.proc.state()
		policy := TokensPolicy(DefaultMaxOutputTokens)
		if t.cfg.TurnPolicy != nil {
			policy = *t.cfg.TurnPolicy
		}
		t.emit(e.call.end(transcript, code, failure, t.clock.Now().Sub(e.start), policy))
	})
}

// release forgets id and cleans the process up in the background: a
// fire-and-forget process/terminate (docs/client.md §10), then the handle is closed once
// the pump has drained.
func (t *Tools) release(id int, p *execProcess) {
	t.store.release(id)
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		select {
		case <-p.drained:
			_ = p.h.Terminate(t.ctx)
		case <-t.ctx.Done():
			p.terminate(context.WithoutCancel(t.ctx))
		}
		p.h.Close()
	}()
}

func (t *Tools) emit(e Event) {
	if t.cfg.Sink != nil {
		t.cfg.Sink(e)
	}
}

func (t *Tools) output(start time.Time, info *callInfo, raw []byte, maxTokens int) *ExecCommandOutput {
	return &ExecCommandOutput{
		EventCallID:        info.callID,
		ChunkID:            newChunkID(),
		WallTime:           t.clock.Now().Sub(start),
		RawOutput:          raw,
		MaxOutputTokens:    maxTokens,
		OriginalTokenCount: ApproxTokenCount(LossyUTF8(raw)),
		SessionCommand:     info.command,
	}
}

func (t *Tools) deniedOutput(start time.Time, info *callInfo, raw []byte, code *int, maxTokens int) *ExecCommandOutput {
	out := t.output(start, info, raw, maxTokens)
	out.ExitCode = code
	out.Denied = deniedError(LossyUTF8(raw), code)
	return out
}

// deniedError builds SandboxDenied (docs/client.md §5.1 step 5).
func deniedError(text string, code *int) *SandboxDeniedError {
	c := -1
	if code != nil {
		c = *code
	}
	msg := FormattedTruncate(text, TokensPolicy(OutputMaxTokens))
	if msg == "" {
		msg = fmt.Sprintf("Process exited with code %d", c)
	}
	return &SandboxDeniedError{Message: msg, Output: text, ExitCode: c}
}

// resolveCwd returns workdir resolved against the turn cwd ("" is absent).
func resolveCwd(turnCwd, workdir string) string {
	if workdir == "" {
		return turnCwd
	}
	if filepath.IsAbs(workdir) {
		return filepath.Clean(workdir)
	}
	return filepath.Join(turnCwd, workdir)
}
