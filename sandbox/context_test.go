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
