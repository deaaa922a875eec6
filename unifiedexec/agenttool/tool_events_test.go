package agenttool_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/codexec/codex/unifiedexec/agenttool"
)

func TestTrailingOutputAfterExit(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		e := newEnv(t, nil)
		e.settle(e.goExec(agenttool.ExecCommandParams{Cmd: "x", YieldTimeMs: ms(250)}))
		h := e.b.handle(0)
		h.exit(0)
		e.advance(50 * time.Millisecond)
		h.output("late")
		e.advance(0)
		if n := len(e.rec.ofType("exec_command_end")); n != 0 {
			t.Fatalf("End before drained: %d", n)
		}
		e.advance(50 * time.Millisecond) // TrailingOutputGrace passes without a close
		ends := e.rec.ofType("exec_command_end")
		if len(ends) != 1 || ends[0].(*agenttool.ExecCommandEndEvent).AggregatedOutput != "late" {
			t.Fatalf("ends %+v", ends)
		}
	})
}

func TestSandboxDeniedAtSpawn(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		e := newEnv(t, func(h *fakeHandle) {
			h.output("Permission denied")
			h.send(agenttool.BackendEvent{Kind: agenttool.BackendExited, ExitCode: 1, SandboxDenied: true})
			h.closeOut()
		})
		ch := make(chan result, 1)
		go func() {
			out, err := e.tools.ExecCommand(t.Context(), agenttool.ExecCommandCall{
				CallID: "c", Cwd: "/w", Params: agenttool.ExecCommandParams{Cmd: "touch /x"},
				Sandbox: json.RawMessage(`{"type":"read-only"}`),
			})
			ch <- result{out, err}
		}()
		r := e.settle(ch)
		if r.err != nil || r.out.Denied == nil || *r.out.ExitCode != 1 || r.out.SessionID != nil {
			t.Fatalf("%+v %v", r.out, r.err)
		}
		if r.out.Denied.Error() != "Command denied by sandbox: Permission denied" {
			t.Fatalf("denied %q", r.out.Denied.Error())
		}
		waitIdle()
		if len(e.rec.all()) != 0 {
			t.Fatalf("denied spawn emitted %v", e.rec.all())
		}
	})
}

func TestStorePruningAndWarning(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		e := newEnv(t, nil)
		for i := range agenttool.MaxProcesses + 1 {
			r := e.settle(e.goExec(agenttool.ExecCommandParams{Cmd: "sleep 1000", YieldTimeMs: ms(250)}))
			if r.err != nil || *r.out.SessionID != 1000+i {
				t.Fatalf("exec %d: %+v %v", i, r.out, r.err)
			}
		}
		waitIdle()
		if e.tools.Len() != agenttool.MaxProcesses {
			t.Fatalf("store holds %d", e.tools.Len())
		}
		if h := e.b.handle(0); h.terminates == 0 {
			t.Fatal("LRU process 1000 was not terminated")
		}
		r := e.settle(e.goWrite(agenttool.WriteStdinParams{SessionID: 1000}))
		if r.err == nil || r.err.Error() != "Unknown process id 1000" {
			t.Fatalf("pruned id: %v", r.err)
		}
		warnings := e.rec.ofType("warning")
		if len(warnings) != 6 || !strings.Contains(warnings[0].(*agenttool.ModelWarningEvent).Message, "you currently have 60 processes open") {
			t.Fatalf("warnings %d", len(warnings))
		}
		if n := len(e.rec.ofType("exec_command_end")); n != 1 {
			t.Fatalf("pruned process ends: %d", n)
		}
		e.tools.TerminateAll(t.Context())
		waitIdle()
		if e.tools.Len() != 0 || len(e.rec.ofType("exec_command_end")) != agenttool.MaxProcesses+1 {
			t.Fatalf("after TerminateAll: %d stored, %d ends", e.tools.Len(), len(e.rec.ofType("exec_command_end")))
		}
	})
}
