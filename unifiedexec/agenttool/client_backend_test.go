package agenttool_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/codexec/codex/unifiedexec/agenttool"
)

// TestToolsOnRealServer runs exec_command and write_stdin through a
// supervised real server: the model-visible text, the events and a PTY
// session that stays alive across calls.
func TestToolsOnRealServer(t *testing.T) {
	ctx, c := supervised(t)
	var mu sync.Mutex // the sink is called from several goroutines
	var events []agenttool.Event
	tools := agenttool.New(agenttool.Config{
		Backend: agenttool.ClientBackend{Client: c},
		Sink: func(ev agenttool.Event) {
			mu.Lock()
			events = append(events, ev)
			mu.Unlock()
		},
	})
	defer tools.Close()

	out, err := tools.ExecCommand(ctx, agenttool.ExecCommandCall{CallID: "c1", Cwd: t.TempDir(),
		Params: agenttool.ExecCommandParams{Cmd: "printf marker; printf err >&2; exit 7"}})
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
	out, err = tools.ExecCommand(ctx, agenttool.ExecCommandCall{CallID: "c2", Cwd: t.TempDir(),
		Params: agenttool.ExecCommandParams{Cmd: "read line; echo got:$line; exit 4", TTY: true, YieldTimeMs: &yield}})
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
	out, err = tools.WriteStdin(ctx, agenttool.WriteStdinCall{Params: agenttool.WriteStdinParams{SessionID: sid, Chars: "ping\n", YieldTimeMs: &yield}})
	if err != nil {
		t.Fatal(err)
	}
	if text = out.Text(); !strings.Contains(text, "got:ping") || !strings.Contains(text, "Process exited with code 4") {
		t.Fatalf("write_stdin returned:\n%s", text)
	}
}

// A StartRequest without an EnvPolicy, copied onto the wire by an
// adapter, gets the same default as StartOptions: the server's
// environment, not exactly Env.
func TestStartRequestDefaultEnvPolicy(t *testing.T) {
	p := agenttool.StartRequest{Argv: []string{"env"}, Env: map[string]string{"A": "1"}}.Params()
	if p.EnvPolicy == nil || p.EnvPolicy.Inherit != "all" || p.Env["A"] != "1" {
		t.Errorf("Params() = env %v, envPolicy %+v; want A=1 over the server's environment", p.Env, p.EnvPolicy)
	}
}
