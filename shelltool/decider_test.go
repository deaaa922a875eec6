package shelltool

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/codexec/codex/execpolicy"
	"github.com/codexec/codex/sandbox"
	"github.com/codexec/codex/shelltool/escalate"
)

// TestPolicyDecider is the decision table of docs/shell-tool.md §7.4 with a fake policy
// and a fake user.
func TestPolicyDecider(t *testing.T) {
	req := escalate.Request{File: "/usr/bin/env", Argv: []string{"env", "init", "."}, Workdir: "/"}
	trust := newCallTrust(&EscalationPolicy{Dirs: TrustedPathDirs("/usr/bin:/bin")}, &sandbox.Plan{ReadOnlyRoot: true})
	run := escalate.Decision{Action: escalate.Run}
	esc := escalate.Decision{Action: escalate.Escalate}
	for _, tc := range []struct {
		name     string
		decision execpolicy.Decision
		driven   bool
		elicit   ElicitFunc
		want     escalate.Decision
		asked    bool
	}{
		{"forbidden", execpolicy.Forbidden, true, nil, deny(reasonForbidden), false},
		{"allow rule escalates", execpolicy.Allow, true, nil, esc, false},
		{"allow heuristic runs", execpolicy.Allow, false, nil, run, false},
		{"prompt without elicitation declines", execpolicy.Prompt, true, nil, deny(reasonDeclined), false},
		{"prompt accepted, rule", execpolicy.Prompt, true, answer(ElicitAccept, nil), esc, true},
		{"prompt accepted, heuristic", execpolicy.Prompt, false, answer(ElicitAccept, nil), run, true},
		{"prompt declined", execpolicy.Prompt, true, answer(ElicitDecline, nil), deny(reasonDeclined), true},
		{"prompt cancelled", execpolicy.Prompt, true, answer(ElicitCancel, nil), deny(reasonCancelled), true},
		{"unknown answer", execpolicy.Prompt, true, answer("maybe", nil), deny(reasonDeclined), true},
		{"elicitation error", execpolicy.Prompt, true, answer("", errors.New("boom")), deny("Failed to ask the user: boom"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var gotCmd []string
			var msg string
			pauses, resumes := 0, 0
			d := &PolicyDecider{
				Evaluate: func(cmd []string) (execpolicy.Decision, bool) { gotCmd = cmd; return tc.decision, tc.driven },
				Pause:    func() func() { pauses++; return func() { resumes++ } },
				trust:    trust,
			}
			if tc.elicit != nil {
				d.Elicit = func(ctx context.Context, m string) (ElicitAction, error) {
					msg = m
					if pauses != 1 || resumes != 0 {
						t.Errorf("asked with pauses %d resumes %d, want the clock paused", pauses, resumes)
					}
					return tc.elicit(ctx, m)
				}
			}
			got := d.Decide(context.Background(), req)
			if (got.Program != nil) != (got.Action == escalate.Escalate) {
				t.Errorf("program %+v for action %v", got.Program, got.Action)
			}
			got.Close()
			got.Program = nil
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v (%v), want %+v (%v)", got, reason(got), tc.want, reason(tc.want))
			}
			if !reflect.DeepEqual(gotCmd, []string{"env", "init", "."}) {
				t.Errorf("evaluated %q, want the base name and argv[1:]", gotCmd)
			}
			if tc.asked && msg != "Allow agent to run `/usr/bin/env init .` in `/`?" {
				t.Errorf("message %q", msg)
			}
			if pauses != resumes {
				t.Errorf("pauses %d, resumes %d", pauses, resumes)
			}
		})
	}
}

// TestPolicyDeciderPreservePaths: with PreserveProgramPaths the full path
// is the program (docs/shell-tool.md §7.4 example).
func TestPolicyDeciderPreservePaths(t *testing.T) {
	var got []string
	d := &PolicyDecider{PreserveProgramPaths: true, Evaluate: func(cmd []string) (execpolicy.Decision, bool) {
		got = cmd
		return execpolicy.Allow, true
	}, trust: newCallTrust(&EscalationPolicy{Dirs: TrustedPathDirs("/usr/bin")}, &sandbox.Plan{ReadOnlyRoot: true})}
	dec := d.Decide(context.Background(), escalate.Request{File: "/usr/bin/env", Argv: []string{"env", "--flag", "value"}, Workdir: "/"})
	defer dec.Close()
	if dec.Action != escalate.Escalate || !reflect.DeepEqual(got, []string{"/usr/bin/env", "--flag", "value"}) {
		t.Fatalf("%v %q", dec, got)
	}
}

func answer(a ElicitAction, err error) ElicitFunc {
	return func(context.Context, string) (ElicitAction, error) { return a, err }
}

func reason(d escalate.Decision) string {
	if d.Reason == nil {
		return "<nil>"
	}
	return *d.Reason
}
