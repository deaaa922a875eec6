//go:build linux && (amd64 || arm64)

package ptrace_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/codexec/codex/shelltool/escalate"
)

// TestRunJudgesEveryExec: every exec of the command is judged (the
// shell's own start, the plan's command, is not), through a nested shell
// too, and Run lets each proceed in the sandbox.
func TestRunJudgesEveryExec(t *testing.T) {
	for name, plan := range plans(t) {
		t.Run(name, func(t *testing.T) {
			d := &decider{}
			r := runTraced(t, plan, d, "/bin/sh", "-c", "echo start; /bin/true; sh -c 'echo nested; exec /bin/echo done'")
			if r.code != 0 || r.out != "start\nnested\ndone\n" {
				t.Fatalf("got %+v", r)
			}
			want := []string{"/bin/true", "/usr/bin/sh", "/bin/echo"}
			got := d.files()
			// sh is found by PATH: /usr/local/bin and /usr/bin come first.
			if len(got) != 3 || got[0] != want[0] || filepath.Base(got[1]) != "sh" || got[2] != want[2] {
				t.Errorf("judged %q, want %q", got, want)
			}
		})
	}
}

// TestDenyExactMessage: a denied exec prints the message on the command's
// stderr and ends with exit code 1; the script goes on; the program never
// ran.
func TestDenyExactMessage(t *testing.T) {
	for name, plan := range plans(t) {
		t.Run(name, func(t *testing.T) {
			marker := filepath.Join(plan.Dir, "touched")
			d := &decider{fn: byName(map[string]escalate.Action{"touch": escalate.Deny})}
			r := runTraced(t, plan, d, "/bin/sh", "-c", "touch "+marker+"; echo rc=$?; env touch "+marker+"; echo rc=$?")
			want := "Execution denied: Execution forbidden by policy\nrc=1\nExecution denied: Execution forbidden by policy\nrc=1\n"
			if r.code != 0 || r.out != want {
				t.Errorf("got %+v, want output %q", r, want)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Error("the denied touch ran")
			}
		})
	}
}

// TestEscalateRunsOutside: an escalated program runs outside the sandbox
// (it writes where the sandbox forbids), on the command's stdout, with
// its exit code, and the script goes on.
func TestEscalateRunsOutside(t *testing.T) {
	plan := plans(t)["pid1"]
	outside := filepath.Join(testDir(t), "outside")
	d := &decider{fn: byName(map[string]escalate.Action{"touch": escalate.Escalate, "false": escalate.Escalate})}
	r := runTraced(t, plan, d, "/bin/sh", "-c", "touch "+outside+"; echo rc=$?; false; echo rc=$?; echo x > "+outside+".2")
	if !strings.HasPrefix(r.out, "rc=0\nrc=1\n") {
		t.Errorf("got %+v", r)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Errorf("escalated touch did not write outside: %v", err)
	}
	if _, err := os.Stat(outside + ".2"); err == nil {
		t.Error("the sandbox did not hold for the shell itself")
	}
	if !slices.Contains(d.files(), "/usr/bin/touch") {
		t.Errorf("judged %q", d.files())
	}
}

// TestEscalatedSignalsAndCodes: the tracee stays stopped while its
// program runs escalated (output order); a death by signal N gives
// 128+N; SIGTERM sent to the stopped tracee (timeout) reaches the
// escalated program.
func TestEscalatedSignalsAndCodes(t *testing.T) {
	plan := plans(t)["pid1"]
	dir := testDir(t)
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("slow.sh", "sleep 0.3; echo slow-done")
	write("selfkill.sh", "kill -USR1 $$")
	write("trapper.sh", "trap 'echo got-term; exit 5' TERM; sleep 10 & wait")
	d := &decider{fn: byName(map[string]escalate.Action{
		"slow.sh": escalate.Escalate, "selfkill.sh": escalate.Escalate, "trapper.sh": escalate.Escalate,
	})}
	r := runTraced(t, plan, d, "/bin/sh", "-c", dir+"/slow.sh; echo after; "+dir+"/selfkill.sh; echo rc=$?; timeout 0.5 "+dir+"/trapper.sh; echo rc=$?")
	if r.out != "slow-done\nafter\nrc=138\ngot-term\nrc=124\n" {
		t.Errorf("got %q", r.out)
	}
}

// quickDecider answers Run for everything at once (QuickDecider) and
// counts the calls of Decide, which must not be needed.
type quickDecider struct {
	decider
	quick atomic.Int32
}

func (q *quickDecider) DecideQuick(escalate.Request) (escalate.Decision, bool) {
	q.quick.Add(1)
	return escalate.Decision{Action: escalate.Run}, true
}

// TestQuickDeciderOnTracerThread: a QuickDecider's immediate Run is used
// without asking Decide.
func TestQuickDeciderOnTracerThread(t *testing.T) {
	q := &quickDecider{}
	r := runTraced(t, plans(t)["exec"], q, "/bin/sh", "-c", "/bin/true; /bin/echo ok")
	if r.out != "ok\n" || q.quick.Load() != 2 || len(q.files()) != 0 {
		t.Errorf("%+v: %d quick answers, Decide asked for %q", r, q.quick.Load(), q.files())
	}
}

// TestPathProbingUnjudged: execvp's attempts on PATH entries that do not
// hold the program (or hold a non-executable file) are let through
// unjudged; only the one that succeeds is judged.
func TestPathProbingUnjudged(t *testing.T) {
	plan := plans(t)["exec"]
	dir := testDir(t)
	if err := os.WriteFile(filepath.Join(dir, "true"), []byte("not executable"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := &decider{}
	r := runTraced(t, plan, d, "/bin/sh", "-c", "env PATH=/nonexistent:"+dir+":/usr/bin true && echo ok")
	if r.out != "ok\n" || !slices.Equal(d.files(), []string{"/usr/bin/env", "/usr/bin/true"}) {
		t.Errorf("%+v, judged %q", r, d.files())
	}
}
