package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// A second reader's attacks on the judged-file escalation and the
// file-based forbidden (docs/shell-tool.md §11). Each test asserts the
// safe behaviour; the ones that fail are attacks that still work (see
// the commit message and the review report).

// TestReviewArgv0SelectsGitBuiltin: the escalated /usr/bin/git keeps the
// command's argv[0], and git runs the builtin its argv[0] names
// ("git-archive" is `git archive`). `exec -a git-archive git status
// --remote=R --exec=CMD` matches the `git status` rule, qualifies (the
// real /usr/bin/git, working directory / outside the writable roots),
// and git archive runs CMD through the shell, unsandboxed.
func TestReviewArgv0SelectsGitBuiltin(t *testing.T) {
	needGit(t)
	ws := canonicalTemp(t)
	outside := canonicalTemp(t)
	script := fmt.Sprintf(`cd /
(exec -a git-archive git status --remote=%[2]s --exec='id > %[1]s/argv0; cat /proc/self/status | grep -i ^capeff >> %[1]s/argv0; false #'); echo rc=$?
`, outside, ws)
	s := startRedteam(t)
	r := s.call(t, 1, script, ws, workspaceProfile(ws), ws, 60000)
	t.Logf("%+v", r)
	if b, err := os.ReadFile(filepath.Join(outside, "argv0")); err == nil {
		t.Errorf("argv[0]=git-archive: the command's shell code ran outside the sandbox: %q", b)
	}
}
