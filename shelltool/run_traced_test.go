package shelltool

import (
	"context"
	"testing"
	"time"

	"github.com/codexec/codex/sandbox"
	"github.com/codexec/codex/shelltool/escalate"
)

// runTracedCall runs command in dir with a TracedRunner on /bin/bash,
// under state's sandbox (nil: none), ended by timeout or ctx.
func runTracedCall(t *testing.T, ctx context.Context, command, dir string, st *sandboxState, d escalate.Decider, timeout time.Duration) Result {
	t.Helper()
	if err := sandbox.Available(); err != nil {
		t.Skipf("sandbox not available: %v", err)
	}
	var plan *sandbox.Plan
	if st != nil {
		var err error
		if plan, err = st.plan(dir, nil); err != nil {
			t.Fatal(err)
		}
		requireSandboxPlan(t, plan)
	}
	expired := make(chan struct{})
	c := &Call{Command: command, Workdir: dir, Plan: plan, Decider: d, Expired: expired,
		Stopwatch: NewStopwatch(nil, timeout, func() { close(expired) })}
	r := &TracedRunner{Bash: DefaultTracedBash, Env: []string{"PATH=/usr/bin:/bin", "LC_ALL=C"}}
	res, err := r.Run(ctx, c)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

// TestTracedRunNoSandboxStillIntercepts: without a sandbox (disabled or
// external), execs are still judged: a Deny holds.
func TestTracedRunNoSandboxStillIntercepts(t *testing.T) {
	d := &recordingDecider{action: escalate.Deny}
	res := runTracedCall(t, context.Background(), "/bin/true; echo rc=$?", t.TempDir(), nil, d, 10*time.Second)
	if res.ExitCode != 0 || res.Output != "Execution denied\nrc=1\n" || len(d.reqs) != 1 {
		t.Fatalf("%+v, requests %+v", res, d.reqs)
	}
}

// TestTracedRunTimeoutAndBackground: a timeout kills Bash and what it
// started (124, timed_out, the output so far); a background job still
// running when Bash exits is killed with the call.
func TestTracedRunTimeoutAndBackground(t *testing.T) {
	d := &recordingDecider{action: escalate.Run}
	ws := canonical(t, t.TempDir())
	st := &sandboxState{profile: sandbox.ReadOnly(false), cwd: ws}
	start := time.Now()
	res := runTracedCall(t, context.Background(), "echo start; sleep 30.0401 & sleep 30.0402", ws, st, d, 2*time.Second)
	if !res.TimedOut || res.ExitCode != 124 || res.Output != "start\n" || time.Since(start) > 7*time.Second {
		t.Fatalf("%+v after %v", res, time.Since(start))
	}
	waitGone(t, "sleep 30.040")
	res = runTracedCall(t, context.Background(), "sleep 30.0403 & echo bg", t.TempDir(), nil, d, 10*time.Second)
	if res.ExitCode != 0 || res.Output != "bg\n" {
		t.Fatalf("%+v", res)
	}
	waitGone(t, "sleep 30.040")
}

// TestTracedRunCancelKillsEscalated: cancelling the call kills an
// escalated program.
func TestTracedRunCancelKillsEscalated(t *testing.T) {
	d := &recordingDecider{action: escalate.Escalate}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(2*time.Second, cancel)
	start := time.Now()
	res := runTracedCall(t, ctx, "/usr/bin/sleep 30.0501", t.TempDir(), nil, d, time.Minute)
	if time.Since(start) > 10*time.Second || res.TimedOut || len(d.reqs) != 1 {
		t.Fatalf("%+v after %v, requests %+v", res, time.Since(start), d.reqs)
	}
	waitGone(t, "sleep 30.050")
}
