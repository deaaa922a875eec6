package agenttool_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/codexec/codex/unifiedexec/agenttool"
)

func ms(v int64) *int64 { return &v }

func TestYieldClamps(t *testing.T) {
	bg := agenttool.DefaultMaxBackgroundTerminalTimeout
	tests := []struct {
		name string
		got  time.Duration
		want time.Duration
	}{
		{"exec default", agenttool.ExecYield(nil), 10 * time.Second},
		{"exec low", agenttool.ExecYield(ms(10)), 250 * time.Millisecond},
		{"exec high", agenttool.ExecYield(ms(31415)), 30 * time.Second},
		{"write default", agenttool.WriteYield(nil, false, bg), 250 * time.Millisecond},
		{"write high", agenttool.WriteYield(ms(60000), false, bg), 30 * time.Second},
		{"poll default", agenttool.WriteYield(nil, true, bg), 5 * time.Second},
		{"poll 100", agenttool.WriteYield(ms(100), true, bg), 5 * time.Second},
		{"poll 60s", agenttool.WriteYield(ms(60000), true, bg), 60 * time.Second},
		{"poll max", agenttool.WriteYield(ms(10_000_000), true, bg), 300 * time.Second},
		{"poll tiny cap", agenttool.WriteYield(ms(60000), true, time.Second), 5 * time.Second},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}

func TestShellArgv(t *testing.T) {
	tests := []struct {
		shell string
		login bool
		want  []string
	}{
		{"/bin/bash", false, []string{"/bin/bash", "-c", "echo hi"}},
		{"/bin/zsh", true, []string{"/bin/zsh", "-lc", "echo hi"}},
		{"pwsh.exe", false, []string{"pwsh.exe", "-NoProfile", "-Command", "echo hi"}},
		{`C:\Windows\System32\cmd.exe`, false, []string{`C:\Windows\System32\cmd.exe`, "/c", "echo hi"}},
	}
	for _, tt := range tests {
		if got := agenttool.ShellArgv(tt.shell, "echo hi", tt.login); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ShellArgv(%q, %v) = %q", tt.shell, tt.login, got)
		}
	}
}

func TestForcedEnv(t *testing.T) {
	env := map[string]string{}
	agenttool.ApplyForcedEnv(env)
	want := map[string]string{
		"NO_COLOR": "1", "TERM": "dumb", "LANG": "C.UTF-8", "LC_CTYPE": "C.UTF-8", "LC_ALL": "C.UTF-8",
		"COLORTERM": "", "PAGER": "cat", "GIT_PAGER": "cat", "GH_PAGER": "cat", "CODEX_CI": "1",
	}
	if !reflect.DeepEqual(env, want) {
		t.Fatalf("forced env %v", env)
	}
	env = map[string]string{"NO_COLOR": "0", "PATH": "/usr/bin"}
	agenttool.ApplyForcedEnv(env)
	if env["NO_COLOR"] != "1" || env["PATH"] != "/usr/bin" {
		t.Fatalf("override: %v", env)
	}
}

func TestWireEnv(t *testing.T) {
	base := map[string]string{"PATH": "/usr/bin", "HOME": "/root", "TERM": "xterm", "A*B": "x"}
	desired := map[string]string{"PATH": "/usr/bin", "TERM": "dumb", "NEW": "1"}
	env, policy := agenttool.WireEnv(base, desired)
	if !reflect.DeepEqual(env, map[string]string{"TERM": "dumb", "NEW": "1"}) {
		t.Fatalf("env %v", env)
	}
	if policy.Inherit != "all" || !policy.IgnoreDefaultExcludes || policy.Set == nil || policy.IncludeOnly == nil {
		t.Fatalf("policy %+v", policy)
	}
	if !reflect.DeepEqual(policy.Exclude, []string{`A\*B`, "HOME"}) {
		t.Fatalf("exclude %q", policy.Exclude)
	}
}

func TestErrorTexts(t *testing.T) {
	tests := map[string]error{
		"Unknown process id 1000":                                                               &agenttool.UnknownProcessIDError{ID: 1000},
		"Failed to create unified exec process: boom":                                           &agenttool.CreateProcessError{Err: errString("boom")},
		"Unified exec process failed: gone":                                                     &agenttool.ProcessFailedError{Message: "gone"},
		"Command denied by sandbox: nope":                                                       &agenttool.SandboxDeniedError{Message: "nope"},
		"failed to write to stdin":                                                              agenttool.ErrWriteToStdin,
		"missing command line for unified exec request":                                         agenttool.ErrMissingCommandLine,
		"unified exec is unavailable in this session":                                           agenttool.ErrUnavailable,
		"stdin is closed for this session; rerun exec_command with tty=true to keep stdin open": agenttool.ErrSessionStdinClosed,
	}
	for want, err := range tests {
		if err.Error() != want {
			t.Errorf("got %q want %q", err.Error(), want)
		}
	}
	got := agenttool.ExecCommandFailedMessage([]string{"/bin/bash", "-c", "echo 'hi'"}, errString("x"))
	if want := "exec_command failed for `/bin/bash -c 'echo '\"'\"'hi'\"'\"''`: x"; got != want {
		t.Errorf("got %q want %q", got, want)
	}
}

type errString string

func (e errString) Error() string { return string(e) }
