package shelltool

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codexec/codex/sandbox"
	"github.com/codexec/codex/shelltool/escalate"
)

// patchedBash is the npm package's patched Bash for this OS (docs/shell-tool.md §2.1):
// $CODEX_TEST_PATCHED_BASH, which `make test` sets from
// scripts/patched-bash.sh (installing it with npm), else the Debian 12
// build in the script's default cache folder.
var patchedBash = func() string {
	if p := os.Getenv("CODEX_TEST_PATCHED_BASH"); p != "" {
		return p
	}
	return "/tmp/codex-shell-tool-mcp-0.97.0/node_modules/@openai/codex-shell-tool-mcp/vendor/x86_64-unknown-linux-musl/bash/debian-12/bash"
}()

// requirePatchedBash skips without the patched Bash.
func requirePatchedBash(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(patchedBash); err != nil {
		t.Skipf("patched Bash not installed (%v): run scripts/patched-bash.sh, or make test, which sets CODEX_TEST_PATCHED_BASH", err)
	}
	return patchedBash
}

// testRunner is a BashRunner with the test binary as the wrapper.
func testRunner(t *testing.T, bash string) *BashRunner {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), escalate.WrapperName)
	if err := os.Symlink(self, link); err != nil {
		t.Fatal(err)
	}
	return &BashRunner{Bash: bash, Wrapper: link, Env: []string{"PATH=/usr/bin:/bin", "LC_ALL=C"}}
}

// recordingDecider records every request and answers with action.
type recordingDecider struct {
	action escalate.Action
	mu     sync.Mutex
	reqs   []escalate.Request
}

func (d *recordingDecider) Decide(_ context.Context, r escalate.Request) escalate.Decision {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.reqs = append(d.reqs, r)
	if d.action == escalate.Escalate {
		return escalateFile(r)
	}
	return escalate.Decision{Action: d.action}
}

// escalateFile is the Escalate decision of a fake decider: r.File, as the
// server's view opens it.
func escalateFile(r escalate.Request) escalate.Decision {
	p, err := escalate.OpenProgram(r.File)
	if err != nil {
		reason := err.Error()
		return escalate.Decision{Action: escalate.Deny, Reason: &reason}
	}
	return escalate.Decision{Action: escalate.Escalate, Program: p}
}

// runCall runs command in dir under state with timeout.
func runCall(t *testing.T, r *BashRunner, command, dir string, st *sandboxState, d escalate.Decider, timeout time.Duration) Result {
	t.Helper()
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
	res, err := r.Run(context.Background(), c)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

// TestRunOutputOrderAndExit: stdout and stderr in arrival order on one
// pipe, the exit code, stdin /dev/null, no ~/.bashrc (--norc), SIGPIPE
// at its default, and a signal death as 128+N. Debian's own Bash.
func TestRunOutputOrderAndExit(t *testing.T) {
	r := testRunner(t, "/bin/bash")
	d := &recordingDecider{}
	for _, tc := range []struct{ cmd, out string }{
		{"echo a; echo b >&2; echo c; exit 3", "a\nb\nc\n"},
		{"cat; echo rc=$?", "rc=0\n"},
		{"yes | head -c1; echo \" ${PIPESTATUS[0]}\"", "y 141\n"},
		{"kill -TERM $$", ""},
	} {
		res := runCall(t, r, tc.cmd, t.TempDir(), nil, d, 10*time.Second)
		if res.Output != tc.out || res.TimedOut {
			t.Errorf("%s: %+v, want output %q", tc.cmd, res, tc.out)
		}
		if strings.HasPrefix(tc.cmd, "echo a") && res.ExitCode != 3 || strings.HasPrefix(tc.cmd, "kill") && res.ExitCode != 143 {
			t.Errorf("%s: exit %d", tc.cmd, res.ExitCode)
		}
	}
}

// TestRunTimeout: the timeout kills Bash and what it started, the result
// has timed_out, 124 and the output so far, quickly.
func TestRunTimeout(t *testing.T) {
	r := testRunner(t, "/bin/bash")
	start := time.Now()
	res := runCall(t, r, "echo start; sleep 30.0101 & sleep 30.0102", t.TempDir(), nil, &recordingDecider{}, 300*time.Millisecond)
	if !res.TimedOut || res.ExitCode != 124 || res.Output != "start\n" || time.Since(start) > 5*time.Second {
		t.Fatalf("%+v after %v", res, time.Since(start))
	}
	waitGone(t, "sleep 30.010")
}

// waitGone fails if a process whose command line contains marker is still
// alive after a second.
func waitGone(t *testing.T, marker string) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for {
		out, _ := exec.Command("pgrep", "-f", marker).Output()
		if len(strings.TrimSpace(string(out))) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still running: %s (%s)", marker, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRunSandboxDeniesWrite: under workspace-write the command writes its
// root and nothing outside it.
func TestRunSandboxDeniesWrite(t *testing.T) {
	ws, outside := canonical(t, t.TempDir()), canonical(t, t.TempDir())
	st := sandboxState{profile: sandbox.WorkspaceWrite(nil, false, true, true), cwd: ws}
	r := testRunner(t, "/bin/bash")
	res := runCall(t, r, "touch in && echo in-ok; touch "+outside+"/out || echo out-denied", ws, &st, &recordingDecider{}, 10*time.Second)
	if !strings.Contains(res.Output, "in-ok") || !strings.Contains(res.Output, "out-denied") {
		t.Fatalf("%+v", res)
	}
	if _, err := os.Stat(filepath.Join(outside, "out")); err == nil {
		t.Fatal("the sandbox let a write outside the roots through")
	}
}

// TestRunEscalateSocketReachesServer: under the sandbox, the patched Bash
// execs the wrapper, whose requests reach the call's Decider through the
// kept socket; Escalate runs the program outside the sandbox (a write the
// sandbox refuses succeeds), and a timeout kills an escalated child.
func TestRunEscalateSocketReachesServer(t *testing.T) {
	bash := requirePatchedBash(t)
	ws, outside := canonical(t, t.TempDir()), canonical(t, t.TempDir())
	st := sandboxState{profile: sandbox.ReadOnly(false), cwd: ws}
	r := testRunner(t, bash)
	d := &recordingDecider{action: escalate.Run}
	res := runCall(t, r, "/usr/bin/touch "+outside+"/run || echo run-denied", ws, &st, d, 10*time.Second)
	if !strings.Contains(res.Output, "run-denied") || len(d.reqs) != 1 || d.reqs[0].File != "/usr/bin/touch" || d.reqs[0].Workdir != ws {
		t.Fatalf("Run: %+v, requests %+v", res, d.reqs)
	}
	d = &recordingDecider{action: escalate.Escalate}
	res = runCall(t, r, "/usr/bin/touch "+outside+"/esc && echo esc-ok", ws, &st, d, 10*time.Second)
	if !strings.Contains(res.Output, "esc-ok") || len(d.reqs) != 1 {
		t.Fatalf("Escalate: %+v, requests %+v", res, d.reqs)
	}
	if _, err := os.Stat(filepath.Join(outside, "esc")); err != nil {
		t.Fatalf("escalated write: %v", err)
	}
	res = runCall(t, r, "/usr/bin/sleep 30.0201", ws, &st, d, 300*time.Millisecond)
	if !res.TimedOut || res.ExitCode != 124 {
		t.Fatalf("timeout: %+v", res)
	}
	waitGone(t, "sleep 30.020")
}

// TestRunCancelKillsEscalated: cancelling the call (notifications/cancelled,
// stdin EOF) kills Bash and the escalated child at once.
func TestRunCancelKillsEscalated(t *testing.T) {
	bash := requirePatchedBash(t)
	ws := canonical(t, t.TempDir())
	st := sandboxState{profile: sandbox.ReadOnly(false), cwd: ws}
	plan, err := st.plan(ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	requireSandboxPlan(t, plan)
	r := testRunner(t, bash)
	d := &recordingDecider{action: escalate.Escalate}
	expired := make(chan struct{})
	c := &Call{Command: "/usr/bin/sleep 30.0301", Workdir: ws, Plan: plan, Decider: d, Expired: expired,
		Stopwatch: NewStopwatch(nil, time.Minute, func() { close(expired) })}
	ctx, cancel := context.WithCancel(context.Background())
	asked := make(chan struct{})
	go func() { // cancel once the escalated sleep has started
		defer close(asked)
		// Anchored: Bash's and the wrapper's command lines hold the same
		// words, and cancelling before the escalation asks nothing.
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if out, _ := exec.Command("pgrep", "-f", "^/usr/bin/sleep 30.0301").Output(); len(out) > 0 {
				break
			}
		}
		cancel()
	}()
	res, err := r.Run(ctx, c)
	<-asked
	if err != nil || res.TimedOut || len(d.reqs) != 1 {
		t.Fatalf("%+v %v, requests %+v", res, err, d.reqs)
	}
	waitGone(t, "sleep 30.030")
}

// TestRunProtectedNamesArePlaceholders: in workspace-write, a missing .git,
// .agents or .codex of the workspace is a read-only placeholder shared with
// every other process sandboxing there (sandbox.GuardPlan), not a name a
// watcher deletes after the fact: the command gets EROFS, the call's exit
// code is the command's, and nothing is left on the host afterwards.
func TestRunProtectedNamesArePlaceholders(t *testing.T) {
	ws := canonical(t, t.TempDir())
	st := sandboxState{profile: sandbox.WorkspaceWrite(nil, false, true, true), cwd: ws}
	r := testRunner(t, "/bin/bash")
	res := runCall(t, r, "for n in .git .agents .codex; do mkdir $n/x 2>&1 | grep -q 'Read-only file system' && echo $n-erofs; done; true", ws, &st, &recordingDecider{}, 10*time.Second)
	for _, n := range []string{".git", ".agents", ".codex"} {
		if !strings.Contains(res.Output, n+"-erofs") {
			t.Errorf("%s: not a read-only placeholder: %+v", n, res)
		}
		if _, err := os.Lstat(filepath.Join(ws, n)); err == nil {
			t.Errorf("%s left on the host after the call", n)
		}
	}
	if res.ExitCode != 0 || strings.Contains(res.Output, "blocked creation") {
		t.Errorf("the run was failed by a watcher: %+v", res)
	}
}
