package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Attacks of review s27 on the MCP shell tool's escalation
// (docs/shell-tool.md §11).

// TestRedteamSymlinkNamedAfterAllowedProgram: an allow rule for `git
// status` escalates git, not whatever trusted program a symlink named
// git leads to. The command makes bin/git -> /usr/bin/find in its
// workspace and runs it through PATH from a directory it cannot write
// (/): the exec is judged by the name git (allowed), the file it runs
// lies in a trusted directory, and before the fix find ran outside the
// sandbox with the command's arguments (-exec mkdir OUTSIDE/pwned).
func TestRedteamSymlinkNamedAfterAllowedProgram(t *testing.T) {
	t.Parallel()
	needGit(t)
	find, err := filepath.EvalSymlinks("/usr/bin/find")
	if err != nil {
		t.Skip(err)
	}
	ws := canonicalTemp(t)
	outside := canonicalTemp(t)
	script := fmt.Sprintf(`mkdir -p bin && ln -s %[1]s bin/git || exit 9
export PATH=$PWD/bin:$PATH
cd / && git status / -maxdepth 0 -exec mkdir %[2]s/pwned ';'; echo rc=$?
`, find, outside)
	s := startRedteam(t)
	r := s.call(t, 1, script, ws, workspaceProfile(ws), ws, 60000)
	t.Logf("%+v", r)
	if _, err := os.Stat(filepath.Join(outside, "pwned")); err == nil {
		t.Errorf("find, named git by a symlink, ran outside the sandbox under the rule for git status: %q", r.Output)
	}
}
