//go:build linux

package sandbox_test

import (
	"os"
	"strings"
	"testing"

	"github.com/codexec/codex/sandbox"
)

// TestTraceExecNeedsTracer is the attack test of Plan.TraceExecFD's
// start-up: unless a tracer attached and said so, the command never runs.
// The sync pipe closed without a byte, and a byte from a spawner that
// never attached, both make the helper refuse (exit 1, nothing printed by
// the command), in both ways the helper runs a command.
func TestTraceExecNeedsTracer(t *testing.T) {
	requireSandbox(t)
	for name, base := range keepPlans(t) {
		for _, write := range []bool{false, true} {
			plan := base
			plan.Argv = shArgv("echo ran")
			plan.TraceExecFD = sandbox.KeepFDFor(&plan)
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			if write {
				if _, err := w.Write([]byte{1}); err != nil {
					t.Fatal(err)
				}
			}
			w.Close()
			res := runPlanWith(t, plan, r)
			r.Close()
			want := "did not attach"
			if write {
				want = "not traced"
			}
			if res.code != 1 || strings.Contains(res.stdout, "ran") || !strings.Contains(res.stderr, want) {
				t.Errorf("%s, byte written %v: %v; want exit 1, %q, no command", name, write, res, want)
			}
		}
	}
}

// TestTraceExecWrapRejects: Wrap refuses a trace fd at another number
// than KeepFDFor, or together with a kept fd.
func TestTraceExecWrapRejects(t *testing.T) {
	for _, p := range []sandbox.Plan{
		{Argv: []string{"true"}, TraceExecFD: 3},
		{Argv: []string{"true"}, TraceExecFD: 5},
		{Argv: []string{"true"}, TraceExecFD: 4, KeepFD: 4},
	} {
		if _, err := sandbox.Wrap(p); err == nil {
			t.Errorf("%+v: Wrap accepted it", p)
		}
	}
	if _, err := sandbox.Wrap(sandbox.Plan{Argv: []string{"true"}, TraceExecFD: 4}); err != nil {
		t.Errorf("TraceExecFD 4: %v", err)
	}
	if !(&sandbox.Plan{TraceExecFD: 4}).Enforces() {
		t.Error("a traced plan must go through the helper (Enforces)")
	}
}

// TestUnsandboxedTraceOnly: an Unsandboxed plan (a shell-tool call that
// asked for no sandbox) gets no namespace, and Wrap refuses one that
// restricts anything besides tracing, or does not trace: no other plan
// can skip the kernel layer (docs/sandbox.md §3.7).
func TestUnsandboxedTraceOnly(t *testing.T) {
	w, err := sandbox.Wrap(sandbox.Plan{Argv: []string{"true"}, TraceExecFD: 4, Unsandboxed: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range w.ExtraFiles {
		f.Close()
	}
	if w.Cloneflags != 0 {
		t.Errorf("unsandboxed plan gets namespaces %#x", w.Cloneflags)
	}
	for name, p := range map[string]sandbox.Plan{
		"not traced":   {Argv: []string{"true"}, Unsandboxed: true},
		"network off":  {Argv: []string{"true"}, TraceExecFD: 4, Unsandboxed: true, Seccomp: sandbox.SeccompRestricted},
		"deny path":    {Argv: []string{"true"}, TraceExecFD: 4, Unsandboxed: true, DenyPaths: []string{"/etc/shadow"}},
		"read-only /":  {Argv: []string{"true"}, TraceExecFD: 4, Unsandboxed: true, ReadOnlyRoot: true},
		"namespace":    {Argv: []string{"true"}, TraceExecFD: 4, Unsandboxed: true, NewNetNS: true},
		"landlock":     {Argv: []string{"true"}, TraceExecFD: 4, Unsandboxed: true, Landlock: &sandbox.LandlockRules{}},
		"fs helper":    {TraceExecFD: 4, Unsandboxed: true, FSHelper: true},
		"watched path": {Argv: []string{"true"}, TraceExecFD: 4, Unsandboxed: true, ProtectedCreate: []string{"/w/.git"}},
	} {
		if _, err := sandbox.Wrap(p); err == nil {
			t.Errorf("%s: Wrap accepted an unsandboxed plan that restricts something", name)
		}
	}
}
