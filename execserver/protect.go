package execserver

import (
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
