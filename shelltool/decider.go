package shelltool

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/codexec/codex/execpolicy"
	"github.com/codexec/codex/shelltool/escalate"
	"github.com/codexec/codex/shelltool/ptrace"
)

// EvaluateFunc judges a command (program + arguments) by the .rules
// policy: the decision, and whether an explicit rule (not the heuristic
// fallback) drove it (docs/shell-tool.md §7.4; (*execpolicy.Policy).Evaluate fits).
type EvaluateFunc func(cmd []string) (d execpolicy.Decision, policyDriven bool)

// ElicitAction is the user's answer to an elicitation.
type ElicitAction string

// The answers of MCP elicitation.
const (
	ElicitAccept  ElicitAction = "accept"
	ElicitDecline ElicitAction = "decline"
	ElicitCancel  ElicitAction = "cancel"
)

// ElicitFunc asks the user with message and returns the answer; an error
// means no usable answer (a JSON-RPC error, the connection gone, ctx done).
type ElicitFunc func(ctx context.Context, message string) (ElicitAction, error)

// The Deny reasons of docs/shell-tool.md §7.4.
const (
	reasonForbidden = "Execution forbidden by policy"
	reasonDeclined  = "User declined execution"
	reasonCancelled = "User cancelled execution"
)

// PolicyDecider is the escalate.Decider of one shell call: it turns the
// policy's verdict on each exec into Run, Escalate or Deny (docs/shell-tool.md §7.4),
// asking the user through Elicit for `prompt`, with the call's stopwatch
// paused while the question is pending. The verdict is taken from the
// file the exec runs as well as from its name (§11.3), and an allowed
// exec escalates only when its file and its working directory qualify
// (§11.1, §11.2); otherwise it runs in the sandbox, with a note.
//
// Evaluate is required. A nil Elicit declines every prompt (a client
// without the elicitation capability); a nil Pause pauses nothing. It is
// safe for concurrent use when its functions are.
type PolicyDecider struct {
	Evaluate EvaluateFunc
	// PreserveProgramPaths matches rules on the full program path instead
	// of its base name.
	PreserveProgramPaths bool
	Elicit               ElicitFunc
	// Pause stops the call's timeout clock until the returned function is
	// called.
	Pause func() (resume func())
	// Programs identifies the files of the rules' programs; nil judges by
	// names only.
	Programs *Programs
	// trust decides what may leave the call's sandbox; nil (a call
	// without a sandbox) escalates nothing: it runs where it is.
	trust *callTrust
}

var _ escalate.Decider = (*PolicyDecider)(nil)

// Decide implements escalate.Decider. It returns a Deny when ctx ends
// while the user is being asked.
func (d *PolicyDecider) Decide(ctx context.Context, r escalate.Request) escalate.Decision {
	j := d.judge(r, 0)
	defer j.close()
	if j.refusal != "" {
		return deny(j.refusal)
	}
	switch j.decision {
	case execpolicy.Allow:
		return d.allowed(r, &j)
	case execpolicy.Prompt:
		return d.ask(ctx, r, &j)
	}
	return deny(reasonForbidden)
}

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

// ask puts the exec to the user.
func (d *PolicyDecider) ask(ctx context.Context, r escalate.Request, j *judgement) escalate.Decision {
	if d.Elicit == nil {
		return deny(reasonDeclined)
	}
	if d.Pause != nil {
		resume := d.Pause()
		defer resume()
	}
	action, err := d.Elicit(ctx, elicitMessage(r))
	switch {
	case err != nil:
		return deny(fmt.Sprintf("Failed to ask the user: %v", err))
	case action == ElicitAccept:
		return d.allowed(r, j)
	case action == ElicitCancel:
		return deny(reasonCancelled)
	}
	return deny(reasonDeclined) // decline, and any answer we do not know
}

// elicitMessage is the question of docs/shell-tool.md §7.6.
func elicitMessage(r escalate.Request) string {
	var args []string
	if len(r.Argv) > 1 {
		args = r.Argv[1:]
	}
	return fmt.Sprintf("Allow agent to run `%s %s` in `%s`?", r.File, shellJoin(args), r.Workdir)
}

// allowed is the action for an allowed exec: Escalate when an explicit
// rule allowed it and it qualifies (docs/shell-tool.md §11), Run (in the
// sandbox) otherwise, with a note when a rule had allowed it.
func (d *PolicyDecider) allowed(r escalate.Request, j *judgement) escalate.Decision {
	if !j.driven || d.trust == nil {
		return escalate.Decision{Action: escalate.Run}
	}
	prog, err := d.qualify(r, j)
	if err != nil {
		return escalate.Decision{Action: escalate.Run,
			Note: fmt.Sprintf("codex: %s not escalated: %v; it runs in the sandbox", r.File, err)}
	}
	return escalate.Decision{Action: escalate.Escalate, Program: prog}
}

// qualify checks that r may leave the sandbox and opens the file to run.
func (d *PolicyDecider) qualify(r escalate.Request, j *judgement) (*escalate.Program, error) {
	if j.loaded {
		return nil, errors.New("it is run through the dynamic loader")
	}
	if len(r.Argv) == 0 {
		return nil, errors.New("it has no argv[0]")
	}
	prog, err := d.trust.qualify(r.File, r.Exe, j.name)
	if err != nil {
		return nil, err
	}
	if err := d.trust.isProgram(prog, j.name); err != nil {
		prog.Close()
		return nil, err
	}
	// Programs such as git, vim and busybox choose what to do by
	// argv[0]: it must name the rule's program, the one judged allowed.
	// Not the name of the path exec'd, which a symlink of the command's
	// chooses (ws/git-archive -> /usr/bin/git runs git archive), nor
	// another name the file has (vim is rvim's file, and unrestricted).
	// The name is what follows the last slash, as programs read it
	// (filepath.Base would call rvim/ rvim; vim finds no name there and
	// runs unrestricted).
	if a0 := r.Argv[0][strings.LastIndex(r.Argv[0], "/")+1:]; a0 != filepath.Base(j.name) {
		prog.Close()
		return nil, fmt.Errorf("its argv[0] %q is not its name", r.Argv[0])
	}
	if j.interp != "" {
		ip, err := d.trust.qualify(j.interp, j.interpExe, filepath.Base(j.interp))
		if err != nil {
			prog.Close()
			return nil, fmt.Errorf("its interpreter: %w", err)
		}
		ip.Close()
	}
	if err := d.trust.confine(r.Workdir); err != nil {
		prog.Close()
		return nil, err
	}
	if err := d.trust.placeArgv0(r.Workdir, r.Argv[0]); err != nil {
		prog.Close()
		return nil, err
	}
	if err := peerAt(r.Peer, r.Workdir); err != nil {
		prog.Close()
		return nil, err
	}
	return prog, nil
}

func deny(reason string) escalate.Decision {
	return escalate.Decision{Action: escalate.Deny, Reason: &reason}
}
