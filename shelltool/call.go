package shelltool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/codexec/codex/netproxy"
	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/sandbox"
	"github.com/codexec/codex/shelltool/escalate"
)

// Runner runs shell calls. Implementations must be safe for concurrent
// use.
type Runner interface {
	// Run runs c until Bash exits, c.Expired is closed (the result then
	// has TimedOut set and exit code 124) or ctx ends, and returns the
	// result. In every case the command, what it left in its process
	// group, and every child escalated for it are killed before Run
	// returns. An error means the call could not run; it is answered as a
	// JSON-RPC error (an *rpc.Error keeps its code, anything else is
	// -32603).
	Run(ctx context.Context, c *Call) (Result, error)
}

// Call is one shell call, resolved and ready to run.
type Call struct {
	Command string
	// Workdir is absolute and was a directory when the call arrived.
	Workdir string
	// Login runs bash -lc; otherwise bash --norc -c.
	Login bool
	// Plan is the sandbox; nil runs Bash without one.
	Plan *sandbox.Plan
	// Stopwatch times the call; the runner starts it when Bash has started
	// and stops it at the end. It closes Expired at the limit.
	Stopwatch *Stopwatch
	Expired   <-chan struct{}
	// Decider judges the execs of the command.
	Decider escalate.Decider
	// Network is the policy of the call's proxy when Plan has one
	// (Plan.Proxy; docs/shell-tool.md §3.6): the runner serves the
	// listeners the helper hands over with it until the command is done.
	Network *netproxy.Policy
}

// callParams are the params of tools/call.
type callParams struct {
	Name      string          `json:"name" rpc:"required"`
	Arguments json.RawMessage `json:"arguments"`
	Meta      json.RawMessage `json:"_meta"`
}

// toolsCall validates a tools/call, resolves its sandbox now (so a later
// update does not change it) and starts it on a goroutine of the
// connection, which answers it.
func (h *handler) toolsCall(req *rpc.Request) (any, error) {
	var p callParams
	if err := rpc.DecodeParams(req.Params, &p); err != nil {
		return nil, err
	}
	if p.Name != ToolName {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "tool not found")
	}
	a, msg := decodeShellArgs(p.Arguments)
	if msg != "" {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "failed to deserialize parameters: %s", msg)
	}
	st := h.state
	ms, err := parseMetaState(p.Meta)
	if err != nil {
		return nil, err
	}
	if ms != nil {
		st = *ms
	}
	st, network := h.cfg.Network.apply(st, h.log)
	workdir := a.Workdir
	if !filepath.IsAbs(workdir) {
		workdir = filepath.Join(h.cfg.Cwd, workdir)
	}
	workdir = filepath.Clean(workdir)
	if err := checkDir(workdir); err != nil {
		return nil, err
	}
	// The command's environment is the server's (BashRunner.Env).
	plan, err := st.plan(workdir, os.Environ())
	if err != nil {
		return nil, rpc.Errorf(rpc.CodeInternalError, "%v", err)
	}
	h.start(req.ID, &a, workdir, plan, network)
	return nil, rpc.ErrAsync
}

// start runs the call on a goroutine of the connection.
func (h *handler) start(id rpc.ID, a *shellArgs, workdir string, plan *sandbox.Plan, network *netproxy.Policy) {
	ctx, cancel := context.WithCancel(h.base)
	expired := make(chan struct{})
	sw := NewStopwatch(h.cfg.Clock, a.timeout(), func() { close(expired) })
	d := &PolicyDecider{Evaluate: h.cfg.Evaluate, PreserveProgramPaths: h.cfg.PreserveProgramPaths, Pause: sw.Pause,
		Programs: h.cfg.Programs, trust: newCallTrust(h.cfg.Escalation, plan)}
	if h.elicitation {
		d.Elicit = h.elicit
	}
	call := &Call{Command: a.Command, Workdir: workdir, Login: a.login(), Plan: plan, Stopwatch: sw, Expired: expired, Decider: d, Network: network}
	key, rc := idKey(id), &runningCall{cancel: cancel}
	h.mu.Lock()
	h.calls[key] = rc
	h.mu.Unlock()
	h.c.Go(func(context.Context) {
		defer func() {
			h.mu.Lock()
			if h.calls[key] == rc {
				delete(h.calls, key)
			}
			h.mu.Unlock()
			cancel()
		}()
		res, err := h.cfg.Runner.Run(ctx, call)
		if rc.cancelled.Load() {
			return // abandoned: the client cancelled it and expects no answer
		}
		if err != nil {
			_ = h.c.Respond(id, nil, err)
			return
		}
		_ = h.c.Respond(id, toolResult(res), nil)
	})
}

// checkDir reports a workdir that is not a directory with the -32603
// error of docs/shell-tool.md §3.3, worded like the reference's OS errors.
func checkDir(dir string) error {
	fi, err := os.Stat(dir)
	if err == nil && !fi.IsDir() {
		err = syscall.ENOTDIR
	}
	if err == nil {
		return nil
	}
	return rpc.Errorf(rpc.CodeInternalError, "%s", osErrorText(err))
}

// osErrorText words an OS error as the reference does:
// "No such file or directory (os error 2)".
func osErrorText(err error) string {
	var en syscall.Errno
	if !errors.As(err, &en) {
		return err.Error()
	}
	s := en.Error()
	if s != "" {
		s = strings.ToUpper(s[:1]) + s[1:]
	}
	return fmt.Sprintf("%s (os error %d)", s, int(en))
}

// elicitParams are the params of elicitation/create (docs/shell-tool.md §7.6), in the
// reference's order.
type elicitParams struct {
	Meta struct {
		ProgressToken rpc.ID `json:"progressToken"`
	} `json:"_meta"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema"`
}

// elicitSchema is the form the client shows.
var elicitSchema = json.RawMessage(`{"type":"object","title":"Execution Permission Request","properties":{"reason":{"type":"string","description":"Optional reason for allowing or denying execution"}}}`)

// elicit asks the client's user with an elicitation/create request whose
// progress token is its own id.
func (h *handler) elicit(ctx context.Context, message string) (ElicitAction, error) {
	var res struct {
		Action ElicitAction `json:"action"`
	}
	err := h.c.CallWithID(ctx, "elicitation/create", func(id rpc.ID) any {
		p := elicitParams{Message: message, RequestedSchema: elicitSchema}
		p.Meta.ProgressToken = id
		return encodeJSON(p) // the command line verbatim: no HTML escaping
	}, &res)
	return res.Action, err
}
