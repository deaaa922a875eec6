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

// TestRedteamArgv0PlantedPrefix: an escalated program keeps its argv[0],
// and Python takes a path there for its own location: a pyvenv.cfg
// beside it (or a standard library below it) makes sys.prefix a folder
// the command wrote, whose site-packages/*.pth lines Python runs at
// start-up. The rule allows one fixed `python3 -c` program; the command
// runs it, from a directory it cannot write, as
// `exec -a $WS/v/bin/python3 python3 -c …`: before the fix its planted
// .pth ran outside the sandbox (mkdir OUTSIDE/pwned). Without a slash
// in argv[0] (or with the real path) the rule still escalates.
func TestRedteamArgv0PlantedPrefix(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	ws := canonicalTemp(t)
	outside := canonicalTemp(t)
	script := fmt.Sprintf(`V=$(python3 -c 'import sys; print("python%%d.%%d" %% sys.version_info[:2])') || exit 9
mkdir -p v/bin v/lib/$V/site-packages || exit 9
echo 'home = /usr/bin' > v/pyvenv.cfg
echo 'import os; os.makedirs("%[1]s/pwned", exist_ok=True)' > v/lib/$V/site-packages/x.pth
W=$PWD; cd /
(exec -a $W/v/bin/python3 python3 -c 'import os; os.mkdir("%[1]s/fixed")'); echo rc=$?
(exec -a python3 python3 -c 'import os; os.mkdir("%[1]s/fixed")'); echo rc=$?
`, outside)
	s := startMCPRules(t, fmt.Sprintf("prefix_rule(pattern=[\"python3\", \"-c\", %q], decision=\"allow\")\n",
		`import os; os.mkdir("`+outside+`/fixed")`))
	r := s.call(t, 1, script, ws, workspaceProfile(ws), ws, 60000)
	t.Logf("%+v", r)
	if _, err := os.Stat(filepath.Join(outside, "pwned")); err == nil {
		t.Errorf("the escalated python3 ran the command's .pth, found through its argv[0]: %q", r.Output)
	}
	if _, err := os.Stat(filepath.Join(outside, "fixed")); err != nil {
		t.Errorf("the allowed python3 -c did not escalate: %q", r.Output)
	}
}
