package unifiedexec_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/codexec/codex/unifiedexec"
)

// TestToolsOnRealServer runs exec_command and write_stdin through a
// supervised real server: the model-visible text, the events and a PTY
// session that stays alive across calls.
func TestToolsOnRealServer(t *testing.T) {
	ctx, c := supervised(t)
	var mu sync.Mutex // the sink is called from several goroutines
	var events []unifiedexec.ToolEvent
	tools := unifiedexec.NewTools(unifiedexec.ToolsConfig{
		Backend: unifiedexec.ClientBackend{Client: c},
		Sink: func(ev unifiedexec.ToolEvent) {
			mu.Lock()
			events = append(events, ev)
			mu.Unlock()
		},
	})
	defer tools.Close()

	out, err := tools.ExecCommand(ctx, unifiedexec.ExecCommandCall{CallID: "c1", Cwd: t.TempDir(),
		Params: unifiedexec.ExecCommandParams{Cmd: "printf marker; printf err >&2; exit 7"}})
	if err != nil {
		t.Fatal(err)
	}
	text := out.Text()
	if !strings.Contains(text, "Process exited with code 7") || !strings.Contains(text, "marker") || !strings.Contains(text, "err") {
		t.Fatalf("tool output:\n%s", text)
	}
	mu.Lock()
	n := len(events)
	mu.Unlock()
	if n < 2 {
		t.Fatalf("events: %d", n)
	}

	yield := int64(300)
	out, err = tools.ExecCommand(ctx, unifiedexec.ExecCommandCall{CallID: "c2", Cwd: t.TempDir(),
		Params: unifiedexec.ExecCommandParams{Cmd: "read line; echo got:$line; exit 4", TTY: true, YieldTimeMs: &yield}})
	if err != nil {
		t.Fatal(err)
	}
	text = out.Text()
	if !strings.Contains(text, "Process running with session ID") {
		t.Fatalf("tty call returned:\n%s", text)
	}
	var sid int32
	if f := strings.Fields(text[strings.Index(text, "session ID")+len("session ID"):]); len(f) > 0 {
		for _, r := range f[0] {
			if r >= '0' && r <= '9' {
				sid = sid*10 + int32(r-'0')
			}
		}
	}
	out, err = tools.WriteStdin(ctx, unifiedexec.WriteStdinCall{Params: unifiedexec.WriteStdinParams{SessionID: sid, Chars: "ping\n", YieldTimeMs: &yield}})
	if err != nil {
		t.Fatal(err)
	}
	if text = out.Text(); !strings.Contains(text, "got:ping") || !strings.Contains(text, "Process exited with code 4") {
		t.Fatalf("write_stdin returned:\n%s", text)
	}
}
