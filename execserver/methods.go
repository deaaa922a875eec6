package execserver

import (
	"context"
	"errors"
	"time"

	"github.com/codexec/codex/proc"
	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wire"
	"golang.org/x/sys/unix"
)

// method is one bound method: its params are decoded before the handshake
// check (docs/protocol.md §5.1), then it runs.
type method struct {
	control bool // answered at once, even while other requests wait
	run     func(ctx context.Context, h *connHandler, req *rpc.Request) (any, error)
}

// bind makes a method whose params decode into P.
func bind[P any](family string, control bool, f func(ctx context.Context, h *connHandler, req *rpc.Request, p *P) (any, error)) method {
	return method{control: control, run: func(ctx context.Context, h *connHandler, req *rpc.Request) (any, error) {
		p := new(P)
		if err := rpc.DecodeParams(req.Params, p); err != nil {
			return nil, err
		}
		if family != "" {
			if err := h.check(family); err != nil {
				return nil, err
			}
		}
		return f(ctx, h, req, p)
	}}
}

// bindNoParams makes a method without params.
func bindNoParams(family string, control bool, f func(h *connHandler) (any, error)) method {
	return method{control: control, run: func(ctx context.Context, h *connHandler, req *rpc.Request) (any, error) {
		if err := rpc.DecodeNoParams(req.Params); err != nil {
			return nil, err
		}
		if err := h.check(family); err != nil {
			return nil, err
		}
		return f(h)
	}}
}

var methods map[string]method

func init() {
	methods = map[string]method{
		wire.MethodInitialize:            bind("", false, initialize),
		wire.MethodEnvironmentInfo:       bindNoParams("environment info", true, envInfo),
		wire.MethodEnvironmentStatus:     bindNoParams("environment status", true, envStatus),
		wire.MethodEnvironmentConfigRead: {run: environmentConfigReadDecoded},
		wire.MethodHTTPRequest:           {run: httpRequestDecoded},
		wire.MethodProcessStart:          bind("exec", false, start),
		wire.MethodProcessRead:           bind("exec", false, read),
		wire.MethodProcessWrite:          bind("exec", false, write),
		wire.MethodProcessCloseStdin:     bind("exec", false, closeStdin),
		wire.MethodProcessSignal:         bind("exec", true, signal),
		wire.MethodProcessTerminate:      bind("exec", true, terminate),
		wire.MethodProcessResize:         bind("exec", true, resize),
		wire.MethodSessionEnd:            bindNoParams("exec", false, endSession),

		wire.MethodCommandExec:          {run: commandExecObserved},
		wire.MethodCommandExecWrite:     {run: commandExecWrite},
		wire.MethodCommandExecResize:    {run: commandExecResize},
		wire.MethodCommandExecTerminate: {run: commandExecTerminate},
	}
}

// capabilities ties each flag of environmentInfo.capabilities to the
// methods behind it (docs/protocol.md §6.3), in the reference's order. A
// flag is on only when it names methods and every one of them is served,
// here, among the Binder's extra methods or the connection's own (conn): a flag cannot be advertised for
// a method that answers -32601, and turning one on is giving it its
// methods on its line. A flag whose feature is not a method of its own (a
// process/start member, a sandbox rule) names none and stays off until
// this table learns to tell that feature is served.
var capabilities = []struct {
	flag    string
	methods []string
}{
	// The managed network proxy is process/start's networkProxy, its
	// review the network/policyRequest the server sends (docs/sandbox.md §9).
	{wire.CapNetworkProxyLaunch, []string{wire.MethodProcessStart}},
	{wire.CapNetworkProxyReviewDomains, []string{wire.MethodProcessStart}},
	{wire.CapCredentialMasking, nil},
	{wire.CapCredentialMaskingCustomProviders, nil},
	{wire.CapCapabilityDiscoverySandbox, []string{wire.MethodCapabilitiesDiscoverV2}},
	{wire.CapFSWatchMissing, []string{wire.MethodFSWatchMissing}},
	{wire.CapCapabilityDiscoveryV2, []string{wire.MethodCapabilitiesDiscoverV2}},
	{wire.CapEnvironmentConfigRead, []string{wire.MethodEnvironmentConfigRead}},
	{wire.CapHTTPHeaderEnvVars, []string{wire.MethodHTTPRequest}},
	{wire.CapSandboxedFileStreaming, []string{wire.MethodFSOpen, wire.MethodFSReadBlock, wire.MethodFSWriteBlock, wire.MethodFSClose}},
	{wire.CapFileWriteStreaming, []string{wire.MethodFSOpen, wire.MethodFSWriteBlock, wire.MethodFSClose}},
	{wire.CapShellSnapshotV2, nil},
	{wire.CapWindowsMxc, nil},
	{wire.CapLinuxRootWritePreservesDevices, nil},
	{wire.CapLinuxApprovedRootWritePreservesRestrictions, nil},
}

// capabilityFlags returns every flag of the capabilities table, on when all
// its methods are served by b or by the connection's own methods, conn.
func (b *Binder) capabilityFlags(conn map[string]rpc.HandlerFunc) map[string]bool {
	flags := make(map[string]bool, len(capabilities))
	for _, c := range capabilities {
		on := len(c.methods) > 0
		for _, m := range c.methods {
			_, bound := methods[m]
			_, extra := b.extra[m]
			_, own := conn[m]
			on = on && (bound || extra || own)
		}
		flags[c.flag] = on
	}
	return flags
}

func initialize(_ context.Context, h *connHandler, _ *rpc.Request, p *wire.InitializeParams) (any, error) {
	h.initMu.Lock()
	defer h.initMu.Unlock()
	if h.state.Load() != stateNew {
		return nil, wire.ErrInitializeTwice()
	}
	if err := h.c.Context().Err(); err != nil {
		// The connection ended (a request still queued may run after
		// its end): its end detached whatever it held, and would not
		// detach a session attached now.
		return nil, err
	}
	var s *Session
	var err error
	if p.ResumeSessionID != nil {
		s, err = h.reg.resume(*p.ResumeSessionID, h.c)
		switch {
		case errors.Is(err, errUnknownSession):
			return nil, wire.ErrUnknownSessionID(*p.ResumeSessionID)
		case errors.Is(err, errSessionAttached):
			return nil, wire.ErrSessionAlreadyAttached(*p.ResumeSessionID)
		}
	} else {
		s, err = h.reg.create(h.c)
		if errors.Is(err, errSessionLimit) {
			return nil, wire.ErrSessionLimitReached(h.reg.cfg.MaxSessions)
		}
	}
	if err != nil {
		return nil, err
	}
	h.sess.Store(s)
	h.experimental.Store(p.Capabilities != nil && p.Capabilities.ExperimentalAPI)
	h.state.Store(stateInitialized)
	return wire.InitializeResult{SessionID: s.id, EnvironmentInfo: h.info()}, nil
}

func (h *connHandler) info() wire.EnvironmentInfo {
	info := environmentInfo(h.reg.cfg.ExecutorVersion, h.reg.cfg.BaseEnv)
	info.Capabilities = h.b.capabilityFlags(h.connExtra)
	return info
}

func envInfo(h *connHandler) (any, error) { return h.info(), nil }

func envStatus(*connHandler) (any, error) { return wire.StatusResult{Status: "ready"}, nil }

func read(_ context.Context, h *connHandler, req *rpc.Request, p *wire.ReadParams) (any, error) {
	e := h.session().lookup(p.ProcessID)
	if e == nil {
		return nil, wire.ErrUnknownProcess(p.ProcessID)
	}
	if entryState(e.state.Load()) == stateStarting {
		return nil, wire.ErrProcessStarting(p.ProcessID)
	}
	var after uint64
	if p.AfterSeq != nil {
		after = *p.AfterSeq
	}
	maxBytes := int64(-1)
	if p.MaxBytes != nil {
		maxBytes = int64(min(*p.MaxBytes, 1<<62))
	}
	res, ready, wake := e.log.read(after, maxBytes)
	if ready || p.WaitMs == nil || *p.WaitMs == 0 {
		return readResult2Wire(res, p.IncludeTruncation), nil
	}
	// Park the long poll; it must not hold up the connection's other
	// requests (docs/protocol.md §1.5). At most MaxParkedReads wait at
	// once, each a goroutine until it is answered.
	if h.parkedReads.Add(1) > MaxParkedReads {
		h.parkedReads.Add(-1)
		return nil, rpc.Errorf(rpc.CodeInternalError, "process/read has %d reads waiting on this connection, the most it may have; wait for one to end", MaxParkedReads)
	}
	wait := time.Duration(min(*p.WaitMs, uint64(24*time.Hour/time.Millisecond))) * time.Millisecond
	h.c.Go(func(ctx context.Context) {
		// It stops counting once it holds the right to write, before its
		// answer can reach the client: a client at the bound that got an
		// answer may park another read at once. At most one answer is
		// written at a time, so the goroutines stay bounded.
		counted := true
		uncount := func() {
			if counted {
				counted = false
				h.parkedReads.Add(-1)
			}
		}
		defer uncount()
		timer := time.NewTimer(wait)
		defer timer.Stop()
		for {
			select {
			case <-wake:
				if ready, wake = e.log.ready(after); !ready {
					continue
				}
			case <-timer.C:
			case <-ctx.Done():
				return
			}
			// The result is read and encoded once the connection may
			// write it: reads woken together by output that a client
			// does not read hold no copy of it while they wait.
			_ = h.c.RespondWhenWritable(req.ID, func() (any, error) {
				uncount()
				res, _, _ := e.log.read(after, maxBytes)
				return readResult2Wire(res, p.IncludeTruncation), nil
			})
			return
		}
	})
	return nil, rpc.ErrAsync
}

// MaxParkedReads bounds the process/read calls of one connection that
// wait at once (waitMs, docs/protocol.md §6.6): one for each process a
// session may run (SessionConfig.MaxProcesses' default). A read that would
// wait beyond it is refused with -32603.
const MaxParkedReads = 1024

func readResult2Wire(r readResult, truncation bool) wire.ReadResult {
	out := wire.ReadResult{
		Chunks:        make([]wire.ReadChunk, len(r.Chunks)),
		NextSeq:       r.NextSeq,
		Exited:        r.Exited,
		ExitCode:      r.ExitCode,
		Closed:        r.Closed,
		SandboxDenied: r.SandboxDenied,
	}
	for i, c := range r.Chunks {
		out.Chunks[i] = wire.ReadChunk{Seq: c.seq, Stream: c.stream.String(), Chunk: c.data}
	}
	if truncation {
		out.WithTruncation = true
		out.Truncated = &r.Truncated
		out.FirstRetainedSeq = r.FirstRetainedSeq
		out.EvictedBytes = &r.EvictedBytes
	}
	return out
}

func write(_ context.Context, h *connHandler, req *rpc.Request, p *wire.WriteParams) (any, error) {
	if p.WriteID != nil && *p.WriteID == "" {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "writeId must not be empty")
	}
	e := h.session().lookup(p.ProcessID)
	if e == nil {
		return wire.WriteResult{Status: wire.WriteUnknownProcess}, nil
	}
	pr := e.p.Load()
	if pr == nil {
		return wire.WriteResult{Status: wire.WriteStarting}, nil
	}
	if p.CloseStdin && pr.IsPTY() {
		return nil, wire.ErrCloseStdinPTY()
	}
	if p.WriteID != nil && !e.rememberWrite(*p.WriteID) {
		return wire.WriteResult{Status: wire.WriteAccepted}, nil // an idempotent retry
	}
	if len(p.Chunk) > 0 {
		// A full queue parks the answer, not the connection: the write
		// waits in order behind the others of this process, and is
		// answered once its bytes are queued (docs/protocol.md §1.5, §6.7).
		cost := parkCost(len(p.Chunk))
		queued, err := pr.WriteAsync(p.Chunk, func() bool { return h.stdin.reserve(cost) }, func(err error) {
			h.stdin.release(cost)
			h.stdin.answer(req.ID, err)
		})
		switch {
		case errors.Is(err, proc.ErrQueueFull):
			if p.WriteID != nil {
				e.forgetWrite(*p.WriteID) // a retry must write
			}
			return nil, wire.ErrStdinFull(p.ProcessID, h.stdin.limit)
		case err != nil:
			return writeStatus(err)
		}
		if !queued {
			if p.CloseStdin {
				_ = pr.CloseStdin() // after the parked chunk, as the queue keeps order
			}
			return nil, rpc.ErrAsync
		}
	}
	if p.CloseStdin {
		if err := pr.CloseStdin(); err != nil {
			return writeStatus(err)
		}
	}
	return wire.WriteResult{Status: wire.WriteAccepted}, nil
}

func writeStatus(err error) (any, error) {
	switch {
	case errors.Is(err, proc.ErrStdinClosed):
		return wire.WriteResult{Status: wire.WriteStdinClosed}, nil
	case errors.Is(err, context.Canceled):
		return nil, err
	}
	return nil, wire.OSError(rpc.CodeInternalError, err)
}

// closeStdin is process/write with no bytes and closeStdin (docs/protocol.md §10.2).
func closeStdin(ctx context.Context, h *connHandler, req *rpc.Request, p *wire.ProcessIDParams) (any, error) {
	return write(ctx, h, req, &wire.WriteParams{ProcessID: p.ProcessID, CloseStdin: true})
}

func signal(_ context.Context, h *connHandler, _ *rpc.Request, p *wire.SignalParams) (any, error) {
	if p.Signal != "interrupt" {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "unknown variant `%s`, expected `interrupt`", rpc.Clip(p.Signal))
	}
	if e := h.session().lookup(p.ProcessID); e != nil {
		if pr := e.p.Load(); pr != nil {
			_ = pr.Signal(unix.SIGINT)
		}
	}
	return struct{}{}, nil
}

func terminate(_ context.Context, h *connHandler, _ *rpc.Request, p *wire.TerminateParams) (any, error) {
	graceful := false
	var grace time.Duration
	if p.Mode != nil {
		switch p.Mode.Type {
		case "force":
		case "graceful":
			graceful = true
			if p.Mode.TimeoutMs != nil {
				grace = time.Duration(min(*p.Mode.TimeoutMs, uint64(24*time.Hour/time.Millisecond))) * time.Millisecond
			}
		default:
			return nil, rpc.Errorf(rpc.CodeInvalidParams, "unknown variant `%s`, expected `force` or `graceful`", rpc.Clip(p.Mode.Type))
		}
	}
	s := h.session()
	e := s.lookup(p.ProcessID)
	if e == nil {
		return wire.TerminateResult{Running: false}, nil
	}
	switch entryState(e.state.Load()) {
	case stateStarting:
		e.stop(errStartCancelled)
		s.remove(e)
		return wire.TerminateResult{Running: true}, nil
	case stateRunning:
		e.stop(terminateCause(graceful, grace))
		return wire.TerminateResult{Running: true}, nil
	case stateExited:
		// The child is gone but its tree still holds the output: the rest
		// of the tree is killed, which closes the process
		// (docs/protocol.md §6.9). Once the output ended it is as good as
		// closed, and what is left belongs to the session. The answer
		// stays the reference's.
		if pr := e.p.Load(); pr != nil && !chanClosed(pr.OutputDone()) {
			e.stop(errTerminated)
		}
	}
	return wire.TerminateResult{Running: false}, nil
}

// endSession handles session/end (docs/protocol.md §10.5): it answers once
// every process tree of the session, and what closed processes left
// running, was killed.
func endSession(h *connHandler) (any, error) {
	h.reg.endByClient(h.session())
	return struct{}{}, nil
}

func resize(_ context.Context, h *connHandler, _ *rpc.Request, p *wire.ResizeParams) (any, error) {
	if p.Size.Rows == 0 || p.Size.Cols == 0 {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "size rows and cols must be greater than 0")
	}
	e := h.session().lookup(p.ProcessID)
	if e == nil {
		return nil, wire.ErrUnknownProcess(p.ProcessID)
	}
	pr := e.p.Load()
	if pr == nil {
		return nil, wire.ErrProcessStarting(p.ProcessID)
	}
	if !pr.IsPTY() {
		return nil, wire.ErrNotPTY(p.ProcessID)
	}
	if entryState(e.state.Load()) >= stateExited {
		return struct{}{}, nil
	}
	if err := pr.Resize(p.Size.Rows, p.Size.Cols); err != nil && !errors.Is(err, unix.ESRCH) {
		return nil, wire.OSError(rpc.CodeInternalError, err)
	}
	return struct{}{}, nil
}

// chanClosed reports whether c is closed.
func chanClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
