package execserver

import (
	"sync"

	"github.com/codexec/codex/proc"
	"github.com/codexec/codex/sandbox"
	"go.uber.org/zap"
)

// guardPlan holds the plan's protected names and placeholders on the host
// for the run (sandbox.GuardPlan: shared with every other process that
// sandboxes in the same roots), logging problems to the session's log.
func guardPlan(plan *sandbox.Plan, log *zap.Logger) *sandbox.HostGuard {
	return sandbox.GuardPlan(plan, func(msg, path string, err error) {
		if err != nil {
			log.Warn(msg, zap.String("path", path), zap.Error(err))
		} else {
			log.Warn(msg, zap.String("path", path))
		}
	})
}

// launcher is the proc.Launcher of a command sandboxed by plan (nil:
// none): the sandbox helper, which reads the plan when the command starts,
// so after guardPlan recorded its placeholders. A network-off command
// whose cgroup leaf cannot stop sendmsg to host unix sockets by path runs
// anyway; the gap is logged once per server process.
func launcher(plan *sandbox.Plan, log *zap.Logger) proc.Launcher {
	return procLauncher(newLauncher(plan, log))
}

// newLauncher is launcher's sandbox launcher, nil for a nil plan.
func newLauncher(plan *sandbox.Plan, log *zap.Logger) *sandbox.Launcher {
	if plan == nil {
		return nil
	}
	return sandbox.NewLauncher(plan, func(err error) {
		unixSendWarning.Do(func() {
			log.Warn("a network-off sandbox can still sendmsg to host unix datagram sockets by path", zap.Error(err))
		})
	})
}

// procLauncher is l as proc's Launcher: a nil l is a nil interface (no
// sandbox), never an interface holding a nil pointer.
func procLauncher(l *sandbox.Launcher) proc.Launcher {
	if l == nil {
		return nil
	}
	return l
}

var unixSendWarning sync.Once
