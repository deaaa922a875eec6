package execserver

// The operator's view of command/exec: the same info lines and metrics as
// for process/start (lifecycle.go, start.go), marked kind "command/exec"
// so the two families can be told apart. A run without a client-supplied
// processId logs processId "".

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/codexec/codex/proc"
	"github.com/codexec/codex/rpc"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// Values of the kind field of the process lines.
const (
	kindProcessStart = "process/start"
	kindCommandExec  = "command/exec"
)

// Causes logged when the server ends a command/exec run.
const (
	execCauseTimeout    = "timeout"
	execCauseTerminate  = "command/exec/terminate"
	execCauseConnClosed = "connection closed"
)

// execObs is what the end line of a run needs from its start.
type execObs struct {
	log       *zap.Logger   // the session's logger
	startedAt time.Time     // when the request was received
	ran       time.Duration // from the request to the reaping of the child
}

// commandExecObserved is commandExec, with a request answered with an error
// after the handshake logged at info as a start failure and counted.
func commandExecObserved(ctx context.Context, h *connHandler, req *rpc.Request) (any, error) {
	res, err := commandExec(ctx, h, req)
	if err == nil || errors.Is(err, rpc.ErrAsync) || h.check("command/exec") != nil {
		return res, err
	}
	// Decoded again only on this path: the id and argv[0] of a request
	// that may not have decoded at all.
	var p struct {
		Command   []string `json:"command"`
		ProcessID string   `json:"processId"`
	}
	_ = json.Unmarshal(req.Params, &p)
	h.reg.cfg.Metrics.StartFailed()
	h.session().log.Info("process start failed", zap.String("kind", kindCommandExec), zap.String("processId", p.ProcessID),
		zap.String("argv0", argv0(p.Command)), zap.Error(err))
	return res, err
}

// execStarted counts and logs a run whose child was spawned, for a request
// received at t0.
func (h *connHandler) execStarted(e *cmdExec, spec *proc.Spec, t0 time.Time) {
	h.reg.procUp() // down at the end of runCommandExec
	h.reg.cfg.Metrics.ProcessStarted(time.Since(t0))
	e.obs = execObs{log: h.session().log, startedAt: t0}
	e.obs.log.Info("process started", zap.String("kind", kindCommandExec), zap.String("processId", e.id), zap.Int("pid", e.pr.Pid()),
		zap.String("argv0", argv0(spec.Argv)), zap.Bool("tty", e.tty), zap.Bool("sandboxed", spec.Launcher != nil))
}

// execExited records how long the run took, once its child was reaped.
func (e *cmdExec) execExited() { e.obs.ran = time.Since(e.obs.startedAt) }

// execEnded counts the end of a run (after its process's Close) and logs
// it: the exit code it reports, the signal that killed the child if one
// did, the bytes it wrote, and the server's cause for ending it ("" if
// none).
func (h *connHandler) execEnded(e *cmdExec, out *execOutput, code int, cause string) {
	h.execClosed(e)
	h.execLogEnd(e, out, code, cause)
}

// execClosed counts the end of a run and fixes its duration.
func (h *connHandler) execClosed(e *cmdExec) {
	h.reg.cfg.Metrics.ProcessClosed()
	if e.obs.ran == 0 {
		e.obs.ran = time.Since(e.obs.startedAt)
	}
}

// execLogEnd writes the "process ended" line of a run counted by
// execClosed.
func (h *connHandler) execLogEnd(e *cmdExec, out *execOutput, code int, cause string) {
	fields := endFields(kindCommandExec, e.id, e.pr, code, e.obs.ran, out.read.Load())
	if cause != "" {
		fields = append(fields, zap.String("cause", cause))
	}
	e.obs.log.Info("process ended", fields...)
}

// endFields are the fields of a "process ended" line that both kinds
// share: the exit code the client sees, the signal that killed the child
// if one did, how long it ran and the bytes it wrote. Room is left for
// the sandbox verdict and the cause.
func endFields(kind, id string, p *proc.Process, code int, ran time.Duration, bytesOut int64) []zap.Field {
	fields := make([]zap.Field, 0, 9)
	fields = append(fields, zap.String("kind", kind), zap.String("processId", id), zap.Int("pid", p.Pid()), zap.Int("exit_code", code))
	if sig := p.ExitSignal(); sig != 0 {
		fields = append(fields, zap.String("signal", unix.SignalName(sig)))
	}
	return append(fields, zap.Int64("duration_ms", ran.Milliseconds()), zap.Int64("bytes_out", bytesOut))
}
