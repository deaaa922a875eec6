package sandbox_test

import (
	"os"
	"reflect"
	"testing"

	"github.com/codexec/codex/sandbox"
)

func TestNewContext(t *testing.T) {
	t.Parallel()
	serverHome, _ := os.UserHomeDir()
	tests := []struct {
		name      string
		sb        *sandbox.Sandbox
		cwd, home string
		roots     []string
	}{
		{"no sandbox object", nil, "/cmd", serverHome, []string{"/cmd"}},
		{"sandbox cwd", &sandbox.Sandbox{Cwd: "/sb"}, "/sb", serverHome, []string{"/sb"}},
		{"workspace roots", &sandbox.Sandbox{Cwd: "/sb", WorkspaceRoots: []string{"/r1", "/r2"}}, "/sb", serverHome, []string{"/r1", "/r2"}},
		{"policy context wins", &sandbox.Sandbox{
			Cwd: "/sb", WorkspaceRoots: []string{"/r1"},
			PolicyContext: &sandbox.PolicyContext{Cwd: "/pc", WorkspaceRoots: []string{"/pr"}},
			UserHomeDir:   "/home/u",
		}, "/pc", "/home/u", []string{"/pr"}},
		{"policy context cwd only", &sandbox.Sandbox{
			WorkspaceRoots: []string{"/r1"}, PolicyContext: &sandbox.PolicyContext{Cwd: "/pc"},
		}, "/pc", serverHome, []string{"/r1"}},
		{"empty policy context", &sandbox.Sandbox{PolicyContext: &sandbox.PolicyContext{}}, "/cmd", serverHome, []string{"/cmd"}},
	}
	for _, tt := range tests {
		ctx := sandbox.NewContext(tt.sb, "/cmd", "/tmp/t")
		if ctx.Cwd != tt.cwd || ctx.HomeDir != tt.home || !reflect.DeepEqual(ctx.WorkspaceRoots, tt.roots) {
			t.Errorf("%s: got cwd %q home %q roots %v; want %q %q %v", tt.name, ctx.Cwd, ctx.HomeDir, ctx.WorkspaceRoots, tt.cwd, tt.home, tt.roots)
		}
		if ctx.CommandCwd != "/cmd" || ctx.TmpDir != "/tmp/t" || ctx.Euid != os.Geteuid() || ctx.Self == "" {
			t.Errorf("%s: host facts %+v", tt.name, ctx)
		}
	}
}

// TestPrepareInheritPIDNamespace: --linux-sandbox-pid-namespace threads
// through Prepare: a command's plan inherits the PID namespace only when
// asked (no NewPIDNS then), an fs call's helper always gets its own.
func TestPrepareInheritPIDNamespace(t *testing.T) {
	if err := sandbox.Available(); err != nil {
		t.Skip(err)
	}
	sb := &sandbox.Sandbox{Permissions: sandbox.ReadOnly(false)}
	dir := t.TempDir()
	for _, c := range []struct {
		inherit bool
		purpose sandbox.Purpose
		want    bool
	}{
		{false, sandbox.PurposeProcess, false},
		{true, sandbox.PurposeProcess, true},
		{true, sandbox.PurposeFSHelper, false},
	} {
		plan, err := sandbox.Prepare(sb, sandbox.Request{Cwd: dir, Purpose: c.purpose, InheritPIDNamespace: c.inherit})
		if err != nil || plan == nil {
			t.Fatalf("%+v: plan %v, err %v", c, plan, err)
		}
		if plan.InheritPIDNS != c.want || plan.NewPIDNS == c.want {
			t.Errorf("%+v: InheritPIDNS %v NewPIDNS %v, want inherit %v", c, plan.InheritPIDNS, plan.NewPIDNS, c.want)
		}
	}
}
