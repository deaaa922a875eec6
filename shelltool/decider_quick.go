package shelltool

import (
	"path/filepath"

	"github.com/codexec/codex/execpolicy"
	"github.com/codexec/codex/shelltool/escalate"
	"github.com/codexec/codex/shelltool/ptrace"
)

var _ ptrace.QuickDecider = (*PolicyDecider)(nil)

// DecideQuick implements ptrace.QuickDecider: Decide's answer when the
// policy alone settles it (allow or forbidden), without blocking; ok is
// false for a prompt, which only Decide can put to the user.
func (d *PolicyDecider) DecideQuick(r escalate.Request) (dec escalate.Decision, ok bool) {
	program := r.File
	if !d.PreserveProgramPaths {
		program = filepath.Base(r.File)
	}
	cmd := []string{program}
	if len(r.Argv) > 1 {
		cmd = append(cmd, r.Argv[1:]...)
	}
	decision, driven := d.Evaluate(cmd)
	switch decision {
	case execpolicy.Allow:
		return allowed(driven), true
	case execpolicy.Prompt:
		return escalate.Decision{}, false
	}
	return deny(reasonForbidden), true
}
