package unifiedexec_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/codexec/codex/sandbox"
	"github.com/codexec/codex/unifiedexec"
)

// TestSandboxBuildersMatchModes: each builder sends what the server's
// sandbox package builds for the same mode (the profiles of `codex exec
// run --sandbox`), roots as file:// URIs.
func TestSandboxBuildersMatchModes(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  json.RawMessage
		want sandbox.Sandbox
	}{
		{"read-only", unifiedexec.ReadOnly(), sandbox.Sandbox{Permissions: sandbox.ReadOnly(false)}},
		{"workspace-write", unifiedexec.WorkspaceWrite(), sandbox.Sandbox{Permissions: sandbox.WorkspaceWrite(nil, false, false, false)}},
		{"workspace-write with roots", unifiedexec.WorkspaceWrite("/w a", "file:///x/y"),
			sandbox.Sandbox{Permissions: sandbox.WorkspaceWrite(nil, false, false, false), WorkspaceRoots: []string{"/w a", "/x/y"}}},
		{"danger-full-access", unifiedexec.DangerFullAccess(), sandbox.Sandbox{Permissions: sandbox.DangerFullAccess()}},
	} {
		want, err := json.Marshal(tc.want)
		if err != nil {
			t.Fatal(err)
		}
		if string(tc.got) != string(want) {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, tc.got, want)
		}
		if _, err := sandbox.ParseSandbox(tc.got); err != nil {
			t.Errorf("%s: the server does not parse it: %v", tc.name, err)
		}
	}
	// A relative root is the server's to refuse, with its own error.
	if got := string(unifiedexec.WorkspaceWrite("rel")); got[len(got)-len(`"workspaceRoots":["rel"]}`):] != `"workspaceRoots":["rel"]}` {
		t.Errorf("relative root: %s", got)
	}
}

// Start commands in the workspace-write sandbox: they may write in their
// workspace, but not in its .git.
func ExampleWorkspaceWrite() {
	ctx := context.Background()
	c, err := unifiedexec.Supervise(ctx, unifiedexec.SuperviseOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	dir, err := os.MkdirTemp("", "workspace-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	if err := os.Mkdir(filepath.Join(dir, ".git"), 0o755); err != nil {
		fmt.Println(err)
		return
	}
	for _, name := range []string{"notes.txt", ".git/config"} {
		p, err := c.Start(ctx, unifiedexec.StartOptions{
			Argv:    []string{"touch", name},
			Cwd:     dir,
			Sandbox: unifiedexec.WorkspaceWrite(dir),
		})
		if err != nil {
			fmt.Println(err)
			return
		}
		st, err := p.Wait(ctx)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s: exit %d, denied %t\n", name, st.Code, st.SandboxDenied)
	}
	// Output:
	// notes.txt: exit 0, denied false
	// .git/config: exit 1, denied true
}
