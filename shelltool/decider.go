package shelltool

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/codexec/codex/execpolicy"
	"github.com/codexec/codex/shelltool/escalate"
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
// paused while the question is pending.
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
}

var _ escalate.Decider = (*PolicyDecider)(nil)

// Decide implements escalate.Decider. It returns a Deny when ctx ends
// while the user is being asked.
func (d *PolicyDecider) Decide(ctx context.Context, r escalate.Request) escalate.Decision {
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
		return allowed(driven)
	case execpolicy.Prompt:
		return d.ask(ctx, r, driven)
	}
	return deny(reasonForbidden)
}

// ask puts the exec to the user.
func (d *PolicyDecider) ask(ctx context.Context, r escalate.Request, driven bool) escalate.Decision {
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
		return allowed(driven)
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
// rule allowed it, Run (in the sandbox) when only the heuristic did.
func allowed(policyDriven bool) escalate.Decision {
	if policyDriven {
		return escalate.Decision{Action: escalate.Escalate}
	}
	return escalate.Decision{Action: escalate.Run}
}

func deny(reason string) escalate.Decision {
	return escalate.Decision{Action: escalate.Deny, Reason: &reason}
}
