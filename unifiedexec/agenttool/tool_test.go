package agenttool_test

import (
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/codexec/codex/unifiedexec/agenttool"
)

func TestExecCommandExitsDuringSpawn(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		e := newEnv(t, func(h *fakeHandle) { h.output("boom\n"); h.exit(17); h.closeOut() })
		start := e.clk.Now()
		r := e.settle(e.goExec(agenttool.ExecCommandParams{Cmd: "exit 17", YieldTimeMs: ms(1000)}))
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.out.SessionID != nil || r.out.ExitCode == nil || *r.out.ExitCode != 17 {
			t.Fatalf("session %v exit %v", r.out.SessionID, r.out.ExitCode)
		}
		if string(r.out.RawOutput) != "boom\n" || e.elapsedSince(start) != 0 {
			t.Fatalf("output %q after %v", r.out.RawOutput, e.elapsedSince(start))
		}
		waitIdle()
		ends := e.rec.ofType("exec_command_end")
		if len(e.rec.ofType("exec_command_begin")) != 1 || len(ends) != 1 {
			t.Fatalf("events %v", e.rec.all())
		}
		end := ends[0].(*agenttool.ExecCommandEndEvent)
		if end.ExitCode != 17 || end.AggregatedOutput != "boom\n" || end.Stdout != "boom\n" || end.Stderr != "" {
			t.Fatalf("end %+v", end)
		}
		if e.tools.Len() != 0 {
			t.Fatalf("store holds %d", e.tools.Len())
		}
	})
}

func TestExecCommandEarlyExitWithinGrace(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		e := newEnv(t, nil)
		start := e.clk.Now()
		ch := e.goExec(agenttool.ExecCommandParams{Cmd: "sleep 0.05", YieldTimeMs: ms(31415)})
		e.advance(50 * time.Millisecond)
		h := e.b.handle(0)
		h.exit(17)
		h.closeOut()
		r := e.settle(ch)
		if r.err != nil || r.out.ExitCode == nil || *r.out.ExitCode != 17 || r.out.SessionID != nil {
			t.Fatalf("%+v %v", r.out, r.err)
		}
		if d := e.elapsedSince(start); d != 50*time.Millisecond || r.out.WallTime != d {
			t.Fatalf("returned after %v (wall %v)", d, r.out.WallTime)
		}
	})
}

func TestExecCommandBeginAndEndFields(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		e := newEnv(t, nil)
		ch := e.goExec(agenttool.ExecCommandParams{Cmd: "sleep 0.5; printf HELLO", Workdir: "sub", YieldTimeMs: ms(1000)})
		e.advance(500 * time.Millisecond)
		h := e.b.handle(0)
		h.output("HELLO")
		h.exit(0)
		h.closeOut()
		r := e.settle(ch)
		if r.err != nil || r.out.SessionID != nil || string(r.out.RawOutput) != "HELLO" {
			t.Fatalf("%+v %v", r.out, r.err)
		}
		waitIdle()
		evs := e.rec.all()
		if len(evs) != 3 {
			t.Fatalf("events %#v", evs)
		}
		begin := evs[0].(*agenttool.ExecCommandBeginEvent)
		wantArgv := []string{"/bin/bash", "-c", "sleep 0.5; printf HELLO"}
		if begin.CallID != "call-1" || begin.TurnID != "turn-1" || begin.ProcessID == nil || *begin.ProcessID != "1000" ||
			!reflect.DeepEqual(begin.Command, wantArgv) || begin.Cwd != "/work/sub" || begin.Source != "unified_exec_startup" ||
			begin.InteractionInput != nil || len(begin.ParsedCmd) == 0 {
			t.Fatalf("begin %+v", begin)
		}
		delta := evs[1].(*agenttool.ExecCommandOutputDeltaEvent)
		if delta.CallID != "call-1" || delta.Stream != "stdout" || string(delta.Chunk) != "HELLO" {
			t.Fatalf("delta %+v", delta)
		}
		end := evs[2].(*agenttool.ExecCommandEndEvent)
		if end.CallID != "call-1" || *end.ProcessID != "1000" || end.ExitCode != 0 || end.AggregatedOutput != "HELLO" ||
			end.FormattedOutput != "HELLO" || end.Duration != 500*time.Millisecond || !reflect.DeepEqual(end.Command, wantArgv) {
			t.Fatalf("end %+v", end)
		}

		b := e.b.starts[0]
		if !regexp.MustCompile(`^1000-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$`).MatchString(b.ProcessID) {
			t.Fatalf("processId %q", b.ProcessID)
		}
		if b.TTY || b.Cwd != "/work/sub" || b.Env["TERM"] != "dumb" || b.Env["CODEX_TOOL_CALL_ID"] != "call-1" || b.EnvPolicy == nil {
			t.Fatalf("start request %+v", b)
		}
	})
}

func TestExecCommandYieldThenPoll(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		e := newEnv(t, nil)
		start := e.clk.Now()
		r := e.settle(e.goExec(agenttool.ExecCommandParams{Cmd: "sleep 0.5; echo ready", YieldTimeMs: ms(10)}))
		if r.err != nil || r.out.SessionID == nil || *r.out.SessionID != 1000 || len(r.out.RawOutput) != 0 || r.out.ExitCode != nil {
			t.Fatalf("%+v %v", r.out, r.err)
		}
		if d := e.elapsedSince(start); d != 250*time.Millisecond {
			t.Fatalf("yield took %v, want the 250 ms clamp", d)
		}
		if !regexp.MustCompile(`^[0-9a-f]{6}$`).MatchString(r.out.ChunkID) {
			t.Fatalf("chunk id %q", r.out.ChunkID)
		}
		if !strings.Contains(r.out.Text(), "Process running with session ID 1000") {
			t.Fatalf("text %q", r.out.Text())
		}
		ch := e.goWrite(agenttool.WriteStdinParams{SessionID: 1000, YieldTimeMs: ms(800)})
		e.advance(250 * time.Millisecond)
		h := e.b.handle(0)
		h.output("ready\n")
		h.exit(0)
		h.closeOut()
		r = e.settle(ch)
		if r.err != nil || r.out.SessionID != nil || *r.out.ExitCode != 0 || string(r.out.RawOutput) != "ready\n" {
			t.Fatalf("%+v %v", r.out, r.err)
		}
		if r.out.EventCallID != "call-1" || e.tools.Len() != 0 {
			t.Fatalf("event call id %q, store %d", r.out.EventCallID, e.tools.Len())
		}
		r = e.settle(e.goWrite(agenttool.WriteStdinParams{SessionID: 1000}))
		var unknown *agenttool.UnknownProcessIDError
		if !errors.As(r.err, &unknown) || r.err.Error() != "Unknown process id 1000" {
			t.Fatalf("poll after exit: %v", r.err)
		}
	})
}

func TestEmptyPollYieldWindow(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		e := newEnv(t, nil)
		e.settle(e.goExec(agenttool.ExecCommandParams{Cmd: "sleep 5 && echo X", YieldTimeMs: ms(10)}))
		start := e.clk.Now()
		r := e.settle(e.goWrite(agenttool.WriteStdinParams{SessionID: 1000, YieldTimeMs: ms(100)}))
		if d := e.elapsedSince(start); r.err != nil || d != 5*time.Second || r.out.SessionID == nil {
			t.Fatalf("empty poll took %v: %v", d, r.err)
		}
	})
}

func TestWriteStdinTTYSession(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		e := newEnv(t, nil)
		r := e.settle(e.goExec(agenttool.ExecCommandParams{Cmd: "/bin/cat", TTY: true, YieldTimeMs: ms(250)}))
		if r.err != nil || r.out.SessionID == nil || r.out.ExitCode != nil {
			t.Fatalf("%+v %v", r.out, r.err)
		}
		h := e.b.handle(0)
		h.onWrite = func(h *fakeHandle, chunk string) {
			if chunk == "\u0004" {
				h.exit(0)
				h.closeOut()
				return
			}
			h.output(chunk)
		}
		r = e.settle(e.goWrite(agenttool.WriteStdinParams{SessionID: 1000, Chars: "hello\n"}))
		if r.err != nil || *r.out.SessionID != 1000 || string(r.out.RawOutput) != "hello\n" {
			t.Fatalf("%+v %v", r.out, r.err)
		}
		r = e.settle(e.goWrite(agenttool.WriteStdinParams{SessionID: 1000}))
		if r.err != nil || r.out.SessionID == nil {
			t.Fatalf("poll: %+v %v", r.out, r.err)
		}
		r = e.settle(e.goWrite(agenttool.WriteStdinParams{SessionID: 1000, Chars: "\u0004"}))
		if r.err != nil || r.out.SessionID != nil || r.out.ExitCode == nil || *r.out.ExitCode != 0 {
			t.Fatalf("ctrl-d: %+v %v", r.out, r.err)
		}
		if !reflect.DeepEqual(h.writeIDs, []string{"1", "2"}) {
			t.Fatalf("write ids %q", h.writeIDs)
		}
		waitIdle()
		var stdin []string
		for _, ev := range e.rec.ofType("terminal_interaction") {
			ti := ev.(*agenttool.TerminalInteractionEvent)
			if ti.CallID != "call-1" || ti.ProcessID != "1000" {
				t.Fatalf("interaction %+v", ti)
			}
			stdin = append(stdin, ti.Stdin)
		}
		if !reflect.DeepEqual(stdin, []string{"hello\n", "", "\u0004"}) {
			t.Fatalf("stdin %q", stdin)
		}
		if len(e.rec.ofType("exec_command_begin")) != 1 || len(e.rec.ofType("exec_command_end")) != 1 {
			t.Fatalf("events %v", e.rec.all())
		}
	})
}

func TestWriteStdinErrors(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		e := newEnv(t, nil)
		e.settle(e.goExec(agenttool.ExecCommandParams{Cmd: "sleep 100", YieldTimeMs: ms(250)}))
		r := e.settle(e.goWrite(agenttool.WriteStdinParams{SessionID: 1000, Chars: "x"}))
		if !errors.Is(r.err, agenttool.ErrSessionStdinClosed) {
			t.Fatalf("non-tty write: %v", r.err)
		}
		r = e.settle(e.goWrite(agenttool.WriteStdinParams{SessionID: 4242}))
		if r.err == nil || r.err.Error() != "Unknown process id 4242" {
			t.Fatalf("unknown: %v", r.err)
		}
		e.settle(e.goExec(agenttool.ExecCommandParams{Cmd: "bash -i", TTY: true, YieldTimeMs: ms(250)}))
		e.b.handle(1).writeStatus = "unknownProcess"
		r = e.settle(e.goWrite(agenttool.WriteStdinParams{SessionID: 1001, Chars: "x"}))
		if !errors.Is(r.err, agenttool.ErrWriteToStdin) {
			t.Fatalf("unknownProcess status: %v", r.err)
		}
		r = e.settle(e.goWrite(agenttool.WriteStdinParams{SessionID: 1001}))
		if r.err != nil || r.out.SessionID != nil {
			t.Fatalf("process not marked exited: %+v %v", r.out, r.err)
		}
	})
}

func TestExecCommandTransportFailure(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		e := newEnv(t, nil)
		ch := e.goExec(agenttool.ExecCommandParams{Cmd: "sleep 100", YieldTimeMs: ms(1000)})
		e.advance(200 * time.Millisecond)
		h := e.b.handle(0)
		h.output("partial")
		const msg = "exec-server transport disconnected: eof"
		h.send(agenttool.BackendEvent{Kind: agenttool.BackendFailed, Message: msg})
		r := e.settle(ch)
		var failed *agenttool.ProcessFailedError
		if !errors.As(r.err, &failed) || r.err.Error() != "Unified exec process failed: "+msg {
			t.Fatalf("err %v", r.err)
		}
		waitIdle()
		ends := e.rec.ofType("exec_command_end")
		if len(ends) != 1 {
			t.Fatalf("ends %v", ends)
		}
		end := ends[0].(*agenttool.ExecCommandEndEvent)
		if end.ExitCode != -1 || end.Stderr != msg || end.Stdout != "partial" || end.AggregatedOutput != "partial\n"+msg {
			t.Fatalf("end %+v", end)
		}
	})
}

func TestExecCommandStartErrorReleasesID(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		e := newEnv(t, nil)
		e.b.startErr = errors.New("spawn refused")
		r := e.settle(e.goExec(agenttool.ExecCommandParams{Cmd: "true"}))
		var ce *agenttool.CreateProcessError
		if !errors.As(r.err, &ce) || len(e.rec.all()) != 0 {
			t.Fatalf("err %v events %v", r.err, e.rec.all())
		}
		e.b.startErr = nil
		r = e.settle(e.goExec(agenttool.ExecCommandParams{Cmd: "sleep 9", YieldTimeMs: ms(250)}))
		if r.err != nil || *r.out.SessionID != 1000 {
			t.Fatalf("id not released: %+v %v", r.out, r.err)
		}
		r = e.settle(e.goExec(agenttool.ExecCommandParams{Cmd: "x", Login: ptr(true)}))
		if !errors.Is(r.err, agenttool.ErrLoginShellDisabled) {
			t.Fatalf("login: %v", r.err)
		}
		r = e.settle(e.goExec(agenttool.ExecCommandParams{}))
		if !errors.Is(r.err, agenttool.ErrMissingCommandLine) {
			t.Fatalf("empty cmd: %v", r.err)
		}
	})
}

func TestExecCommandMaxOutputTokens(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		e := newEnv(t, func(h *fakeHandle) {
			h.output(strings.Repeat("0123456789", 20))
			h.exit(0)
			h.closeOut()
		})
		r := e.settle(e.goExec(agenttool.ExecCommandParams{Cmd: "seq", MaxOutputTokens: ms(6)}))
		if r.err != nil || !strings.Contains(r.out.Text(), "tokens truncated") || r.out.OriginalTokenCount <= 6 {
			t.Fatalf("%q %v", r.out.Text(), r.err)
		}
	})
}
