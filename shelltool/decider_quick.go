package shelltool

import (
	"github.com/codexec/codex/execpolicy"
	"github.com/codexec/codex/shelltool/escalate"
	"github.com/codexec/codex/shelltool/ptrace"
)

var _ ptrace.QuickDecider = (*PolicyDecider)(nil)

// DecideQuick implements ptrace.QuickDecider: Decide's answer when the
// policy alone settles it (allow or forbidden), without blocking; ok is
// false for a prompt, which only Decide can put to the user.
func (d *PolicyDecider) DecideQuick(r escalate.Request) (dec escalate.Decision, ok bool) {
	j := d.judge(r, 0)
	defer j.close()
	switch {
	case j.refusal != "":
		return deny(j.refusal), true
	case j.decision == execpolicy.Allow:
		return d.allowed(r, &j), true
	case j.decision == execpolicy.Prompt:
		return escalate.Decision{}, false
	}
	return deny(reasonForbidden), true
}
