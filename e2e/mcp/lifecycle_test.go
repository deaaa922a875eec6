package mcp

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// waitForProc waits until a process of s whose command line is exactly cmd
// (arguments joined by spaces) runs, failing the test after 10 s. (A
// wrapper or `sh -c` whose script merely contains cmd does not count.)
func (s *server) waitForProc(cmd string) {
	s.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, pid := range markedPids(s.marker) {
			cl, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
			if strings.TrimSpace(strings.ReplaceAll(string(cl), "\x00", " ")) == cmd {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.t.Fatalf("no process running %q within 10 s", cmd)
}

// noStrays fails the test if a process of s other than the server is still
// there after a grace period.
func (s *server) noStrays(when string) {
	s.t.Helper()
	if left := s.strays(3 * time.Second); len(left) > 0 {
		s.t.Errorf("%s: processes left running: %v", when, left)
	}
}

// docs/shell-tool.md §9.12, §3.4: a timeout kills Bash and the escalated child still running;
// the result has timed_out true, exit code 124 and the output so far.
func TestTimeoutKillsEscalatedChild(t *testing.T) {
	t.Parallel()
	oursOnly(t, "answers a timeout with -32603 and leaves escalated children running")
	s := start(t, opts{})
	late := filepath.Join(s.outside, "late")
	args := s.shellArgs(`echo before; sh -c '` + s.esc("started") + `sleep 3; touch ` + late + `'; echo never`)
	args["timeout_ms"] = 1500
	t0 := time.Now()
	out := s.call(args, nil)
	if el := time.Since(t0); el > 3*time.Second {
		t.Errorf("a 1.5 s timeout answered after %v", el)
	}
	if !out.res.TimedOut || out.res.ExitCode != 124 || out.res.Output != "before\n" {
		t.Errorf("result %+v, want timed_out, exit_code 124, output \"before\\n\"", out.res)
	}
	s.noStrays("after the timeout")
	s.escalated("started")
	time.Sleep(time.Until(t0.Add(3500 * time.Millisecond)))
	if _, err := os.Stat(late); err == nil {
		t.Errorf("the escalated child outlived the timeout and wrote %s", late)
	}
}

// docs/shell-tool.md §3.4: timeout_ms 0 expires at once.
func TestTimeoutZero(t *testing.T) {
	t.Parallel()
	oursOnly(t, "answers a timeout with -32603")
	s := start(t, opts{})
	args := s.shellArgs("sleep 5")
	args["timeout_ms"] = 0
	t0 := time.Now()
	out := s.call(args, nil)
	if !out.res.TimedOut || out.res.ExitCode != 124 || time.Since(t0) > 3*time.Second {
		t.Errorf("result %+v after %v, want timed_out at once", out.res, time.Since(t0))
	}
}

// docs/shell-tool.md §3.4, §7.6: time spent waiting for the user does not count: a prompt
// answered after 1.5 s in a call with a 1 s timeout still runs.
func TestTimeoutPausedDuringElicitation(t *testing.T) {
	t.Parallel()
	s := start(t, opts{})
	dir := filepath.Join(s.ws, "slow-answer")
	args := s.shellArgs("mkdir " + dir + "; echo mkdir=$?")
	args["timeout_ms"] = 1000
	out := s.call(args, func(msg) string {
		time.Sleep(1500 * time.Millisecond)
		return `{"action":"accept","content":{}}`
	})
	if out.res.TimedOut || out.res.Output != "mkdir=0\n" {
		t.Errorf("result %+v, want mkdir=0 without a timeout", out.res)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Errorf("%s not made: %v", dir, err)
	}
}

// notifications/cancelled ends the call: Bash and its escalated children
// are killed, and the server goes on serving (docs/shell-tool.md §3.1, ours).
func TestCancelledKillsCall(t *testing.T) {
	t.Parallel()
	oursOnly(t, "ignores notifications/cancelled")
	s := start(t, opts{})
	args := s.shellArgs(`sh -c '` + s.esc("started") + `sleep 31'`)
	args["timeout_ms"] = 60000
	id := s.startCall(args, nil)
	s.waitForProc("sleep 31")
	s.sendRaw(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + id + `,"reason":"test"}}`)
	s.noStrays("after notifications/cancelled")
	s.escalated("started")
	if r := s.request("ping", nil); r.Error != nil || string(r.Result) != "{}" {
		t.Errorf("ping after the cancel: %s", r.Raw)
	}
}

// stdin EOF ends the server at once and kills its running commands.
func TestStdinEOFEndsServerAndCommands(t *testing.T) {
	t.Parallel()
	s := start(t, opts{})
	args := s.shellArgs("sleep 32")
	args["timeout_ms"] = 60000
	s.startCall(args, nil)
	s.waitForProc("sleep 32")
	s.checkEOF()
}

// The same with an escalated child running (ours: children are the call's).
func TestStdinEOFKillsEscalatedChildren(t *testing.T) {
	t.Parallel()
	oursOnly(t, "does not track escalated children")
	s := start(t, opts{})
	args := s.shellArgs(`sh -c '` + s.esc("started") + `sleep 33'`)
	args["timeout_ms"] = 60000
	s.startCall(args, nil)
	s.waitForProc("sleep 33")
	s.checkEOF()
	s.escalated("started")
}

func (s *server) checkEOF() {
	s.t.Helper()
	s.stdin.Close()
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		s.t.Errorf("server still running 5 s after stdin EOF")
	}
	s.noStrays("after stdin EOF")
}
