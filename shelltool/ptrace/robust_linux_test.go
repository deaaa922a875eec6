//go:build linux && (amd64 || arm64)

package ptrace_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/codexec/codex/shelltool/escalate"
)

// progCmd is a shell command running the test binary as program mode
// args, in a subshell.
func progCmd(t *testing.T, args ...string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return "(exec -a " + progArg0 + " " + self + " " + strings.Join(args, " ") + ")"
}

// TestRaceKilledBeforeFirstInstruction: a process whose other thread
// rewrites the exec path after the decision (allowed true → forbidden
// touch) never runs touch: it is denied at the stop or killed at the exec
// event, before its first instruction.
func TestRaceKilledBeforeFirstInstruction(t *testing.T) {
	plan := plans(t)["exec"]
	marker := filepath.Join(plan.Dir, "raced")
	d := &decider{fn: byName(map[string]escalate.Action{"touch": escalate.Deny})}
	script := "for i in $(seq 150); do " + progCmd(t, "race", marker) + " 2>/dev/null; echo status=$?; done"
	r := runTraced(t, plan, d, "/bin/bash", "--norc", "-c", script)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("touch ran: the racing exec was not stopped")
	}
	counts := map[string]int{}
	for _, line := range strings.Split(r.out, "\n") {
		if strings.HasPrefix(line, "status=") {
			counts[strings.TrimPrefix(line, "status=")]++
		}
	}
	t.Logf("statuses: %v (0: true ran, 1: touch denied at the stop, 137: killed at the exec event)", counts)
	if counts["0"]+counts["1"]+counts["137"] != 150 {
		t.Errorf("statuses %v, want only 0, 1 and 137, 150 in all", counts)
	}
}

// TestPtraceDeniedInside: a traced command can neither attach to another
// process nor ask to be traced.
func TestPtraceDeniedInside(t *testing.T) {
	for name, plan := range plans(t) {
		plan.Seccomp = "" // the base filter: the tracing rules alone deny ptrace
		plan.NetworkDisabled = false
		if name == "pid1" {
			plan.NewNetNS = false
		}
		r := runTraced(t, plan, &decider{}, "/bin/bash", "--norc", "-c", progCmd(t, "ptrace"))
		if r.out != "attach=operation not permitted traceme=operation not permitted\n" {
			t.Errorf("%s: %+v", name, r)
		}
	}
}

// TestForksAndThreads: thousands of forks, a Go program's concurrent
// execs, python threads, posix_spawn (vfork), signals and job-control
// stops all go through the tracer.
func TestForksAndThreads(t *testing.T) {
	plan := plans(t)["pid1"]
	d := &decider{}
	script := `for i in $(seq 2000); do /bin/true; done; echo forks
` + progCmd(t, "threads") + `
python3 -c '
import os, threading, subprocess
def run(): subprocess.run(["/bin/true"], check=True)
ts = [threading.Thread(target=run) for _ in range(50)]
[t.start() for t in ts]; [t.join() for t in ts]
print("py threads", flush=True)
os.waitpid(os.posix_spawn("/bin/echo", ["echo", "spawned"], dict(os.environ)), 0)
'
trap 'echo usr1' USR1; kill -USR1 $$
sleep 5 & p=$!; kill -STOP $p; kill -CONT $p; kill $p; wait $p; echo stopped-and-killed=$?`
	start := time.Now()
	r := runTraced(t, plan, d, "/bin/bash", "--norc", "-c", script)
	t.Logf("took %v, %d judged execs", time.Since(start), len(d.files()))
	want := "forks\ngo fails=0\npy threads\nspawned\nusr1\nstopped-and-killed=143\n"
	if r.code != 0 || r.out != want {
		t.Errorf("got %+v, want %q", r, want)
	}
}

// TestDeathAtStop: a tracee killed while its decision is pending (or
// while its escalated program runs) is cleaned up: the decision's context
// ends, the escalated program is killed, the call goes on.
func TestDeathAtStop(t *testing.T) {
	plan := plans(t)["pid1"]
	ended := make(chan struct{}, 4)
	d := &decider{fn: func(r escalate.Request) escalate.Decision {
		if filepath.Base(r.File) == "sleep" && len(r.Argv) > 1 && r.Argv[1] == "7" {
			return escalate.Decision{Action: escalate.Escalate}
		}
		return escalate.Decision{Action: escalate.Run}
	}}
	slow := &slowDecider{inner: d, block: "yes", ended: ended}
	r := runTraced(t, plan, slow, "/bin/sh", "-c", "timeout -s KILL 0.3 yes; echo rc=$?; timeout -s KILL 0.3 sleep 7; echo rc=$?")
	if strings.Count(r.out, "rc=137\n") != 2 {
		t.Errorf("got %+v", r)
	}
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Error("the pending decision's context did not end")
	}
}

// slowDecider blocks on programs named block until ctx ends.
type slowDecider struct {
	inner escalate.Decider
	block string
	ended chan struct{}
}

func (s *slowDecider) Decide(ctx context.Context, r escalate.Request) escalate.Decision {
	if filepath.Base(r.File) == s.block {
		<-ctx.Done()
		s.ended <- struct{}{}
		return escalate.Decision{Action: escalate.Deny}
	}
	return s.inner.Decide(ctx, r)
}

// TestOtherChildrenNotReaped: a child of the server that exits during a
// traced call is still the server's to wait for, and the call leaves no
// zombie behind.
func TestOtherChildrenNotReaped(t *testing.T) {
	// Children forked on many threads, which go back to the pool where
	// the tracer may find one of them.
	var others []*exec.Cmd
	for range 8 {
		c := exec.Command("/bin/sh", "-c", "sleep 0.3; exit 7")
		started := make(chan error)
		go func() {
			runtime.LockOSThread()
			started <- c.Start()
			runtime.UnlockOSThread()
		}()
		if err := <-started; err != nil {
			t.Fatal(err)
		}
		others = append(others, c)
	}
	for range 3 {
		r := runTraced(t, plans(t)["exec"], &decider{}, "/bin/sh", "-c", "sleep 0.2; /bin/true; echo ok")
		if r.out != "ok\n" {
			t.Errorf("got %+v", r)
		}
	}
	for i, c := range others {
		err := c.Wait()
		if c.ProcessState == nil || c.ProcessState.ExitCode() != 7 {
			t.Errorf("other child %d: %v (reaped by the tracer?)", i, err)
		}
	}
	if z := zombies(t); len(z) > 0 {
		t.Errorf("zombie children left: %v", z)
	}
}

// zombies lists the test process's children in state Z.
func zombies(t *testing.T) []string {
	t.Helper()
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	var out []string
	for _, f := range tasks {
		data, _ := os.ReadFile(f)
		for _, pid := range strings.Fields(string(data)) {
			st, _ := os.ReadFile("/proc/" + pid + "/stat")
			if i := strings.LastIndexByte(string(st), ')'); i > 0 && len(st) > i+2 && st[i+2] == 'Z' {
				out = append(out, pid)
			}
		}
	}
	return out
}

// TestHelperExitRace: the helper, PID 1 of its namespace with a
// protected-create watcher, exits right after its command, while the Go
// runtime may be creating a thread whose clone event is never reported;
// each run must still end (the tracer reaps what it was not told about).
func TestHelperExitRace(t *testing.T) {
	plan := plans(t)["pid1"]
	plan.ProtectedCreate = []string{plan.Dir + "/.codex"}
	for i := range 40 {
		done := make(chan traced, 1)
		go func() { done <- runTraced(t, plan, &decider{}, "/bin/sh", "-c", "exit 3") }()
		select {
		case r := <-done:
			if r.code != 3 {
				t.Fatalf("run %d: %+v", i, r)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("run %d hung", i)
		}
	}
}
