package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Attacks on the MCP shell tool's escalation (docs/shell-tool.md §11):
// a hostile command under a workspace-write sandbox tries to get an
// allow rule to run its own code outside the sandbox, or to run a
// forbidden program under another name. Each attack's proof of success
// is a file outside every writable root (or a forbidden program's mark);
// every one of them must stay absent.

// redteamRules allow `git status` and `printenv` (escalated) and forbid
// touch.
const redteamRules = `prefix_rule(pattern=["git", "status"], decision="allow")
prefix_rule(pattern=["printenv"], decision="allow")
prefix_rule(pattern=["touch"], decision="forbidden")
`

// startRedteam starts exec-mcp-server (default interception) with
// redteamRules and extra flags.
func startRedteam(t *testing.T, args ...string) *mcpServer {
	t.Helper()
	return startMCPRules(t, redteamRules, args...)
}

func needGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
}

// TestRedteamLookalikeEscalation: a script named git, written by the
// command in its workspace, reached as ./git, $PWD/git, through PATH and
// through a symlink, is never run outside the sandbox: it runs inside
// (its write outside fails) and the output says why it was not
// escalated (the file lies where the sandbox can write) — with the
// server's defaults, and with the working directory trusted
// (--escalate-in-writable-dirs). The real printenv, reached through a
// symlink named otherwise in the workspace (with argv[0] printenv: the
// symlink's name is no name of the file, §11.1), escalates only with that
// flag: by default the workspace is no place to escalate from.
func TestRedteamLookalikeEscalation(t *testing.T) {
	t.Parallel()
	needGit(t)
	for _, args := range [][]string{nil, {"--escalate-in-writable-dirs"}} {
		ws := canonicalTemp(t)
		outside := canonicalTemp(t)
		evil := "#!/bin/sh\necho evil-ran\necho pwned > " + outside + "/$V 2>/dev/null\n"
		script := `printf '%s' "$EVIL" > git; chmod +x git
mkdir -p bin sub; printf '%s' "$EVIL" > sub/evil; chmod +x sub/evil; ln -s ../sub/evil bin/git
V=dot ./git status; echo rc=$?
V=abs $PWD/git status; echo rc=$?
V=path PATH=.:$PATH git status; echo rc=$?
V=symlink bin/git status; echo rc=$?
ln -s /usr/bin/printenv pe; (exec -a printenv ./pe)
`
		s := startRedteam(t, args...)
		r := s.call(t, 1, "export EVIL='"+evil+"'\n"+script, ws, workspaceProfile(ws), ws, 60000)
		t.Logf("%v: %+v", args, r)
		for _, v := range []string{"dot", "abs", "path", "symlink"} {
			if _, err := os.Stat(filepath.Join(outside, v)); err == nil {
				t.Errorf("%v %s: the lookalike git ran outside the sandbox", args, v)
			}
		}
		if n := strings.Count("\n"+r.Output, "\nevil-ran\n"); n != 4 {
			t.Errorf("%v: the lookalike ran %d times in the sandbox, want 4: %q", args, n, r.Output)
		}
		const want = "/git not escalated: the sandbox can write"
		if n := strings.Count(r.Output, want); n < 4 {
			t.Errorf("%v: %d notes %q on the refused escalations, want 4: %q", args, n, want, r.Output)
		}
		escalated := strings.Contains(r.Output, "PWD="+ws+"\n") && !strings.Contains(r.Output, "CODEX_SANDBOX")
		if escalated != (args != nil) {
			t.Errorf("%v: printenv through a symlink escalated: %v, want %v", args, escalated, args != nil)
		}
	}
}

// TestRedteamEscalatedEnvironment: an escalated program gets the server's
// environment plus the harmless request variables, never what changes
// the code it loads or runs.
func TestRedteamEscalatedEnvironment(t *testing.T) {
	t.Parallel()
	needGit(t)
	ws := canonicalTemp(t)
	outside := canonicalTemp(t)
	repo := canonicalTemp(t)
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	script := fmt.Sprintf(`GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0='echo x > %[1]s/fsmonitor; false' git status >/dev/null 2>&1; echo rc=$?
GIT_TRACE=%[1]s/trace git status >/dev/null 2>&1; echo rc=$?
LANG=C.UTF-8 TERM=dumb LD_PRELOAD=/nonexistent.so LD_LIBRARY_PATH=%[2]s BASH_ENV=%[2]s/x ENV=%[2]s/x PYTHONPATH=%[2]s NODE_OPTIONS=--require=x PERL5OPT=-Mx RUBYOPT=-rx PATH=%[2]s:$PATH SECRET_TOKEN=s printenv
`, outside, ws)
	s := startRedteam(t)
	r := s.call(t, 1, script, repo, readOnlyProfile, repo, 60000)
	t.Logf("%+v", r)
	for _, f := range []string{"fsmonitor", "trace"} {
		if _, err := os.Stat(filepath.Join(outside, f)); err == nil {
			t.Errorf("%s: the escalated git obeyed the sandbox's environment", f)
		}
	}
	for _, bad := range []string{"LD_PRELOAD", "LD_LIBRARY_PATH", "BASH_ENV", "ENV=", "PYTHONPATH", "NODE_OPTIONS", "PERL5OPT", "RUBYOPT", "SECRET_TOKEN", "PATH=" + ws, "cannot be preloaded"} {
		if strings.Contains(r.Output, bad) {
			t.Errorf("the escalated printenv saw %q: %q", bad, r.Output)
		}
	}
	for _, good := range []string{"LANG=C.UTF-8", "TERM=dumb", "PATH=/usr/bin:/bin\n"} {
		if !strings.Contains(r.Output, good) {
			t.Errorf("the escalated printenv lacks %q: %q", good, r.Output)
		}
	}
}

// TestRedteamPlantedRepositoryConfig: a repository the command creates in
// its workspace, with code planted in its config, is never acted on by an
// escalated git: an escalation whose working directory the sandbox can
// write runs in the sandbox (unless the operator opts in).
func TestRedteamPlantedRepositoryConfig(t *testing.T) {
	t.Parallel()
	needGit(t)
	ws := canonicalTemp(t)
	outside := canonicalTemp(t)
	script := fmt.Sprintf(`git init -q sub && cd sub || exit 9
git config core.fsmonitor 'echo x > %[1]s/fsmonitor; false'
git config core.pager 'cat > %[1]s/pager'
git config pager.status true
git config trace2.normalTarget %[1]s/trace2
git config core.hooksPath %[2]s/hooks
mkdir -p %[2]s/hooks; printf '#!/bin/sh\necho x > %[1]s/hook\n' > %[2]s/hooks/post-index-change; chmod +x %[2]s/hooks/post-index-change
git status; echo rc=$?
`, outside, ws)
	s := startRedteam(t)
	r := s.call(t, 1, script, ws, workspaceProfile(ws), ws, 60000)
	t.Logf("%+v", r)
	for _, f := range []string{"fsmonitor", "pager", "trace2", "hook"} {
		if _, err := os.Stat(filepath.Join(outside, f)); err == nil {
			t.Errorf("%s: planted repository config ran outside the sandbox", f)
		}
	}
}

// TestRedteamPlantedAcrossCalls: a repository planted by a
// workspace-write call is still no place to escalate from in a later
// read-only call of the same server, where the workspace is not
// writable.
func TestRedteamPlantedAcrossCalls(t *testing.T) {
	t.Parallel()
	needGit(t)
	ws := canonicalTemp(t)
	outside := canonicalTemp(t)
	s := startRedteam(t)
	plant := fmt.Sprintf("git init -q sub && git -C sub config core.fsmonitor 'echo x > %s/fsmonitor; false'; echo planted", outside)
	if r := s.call(t, 1, plant, ws, workspaceProfile(ws), ws, 60000); !strings.Contains(r.Output, "planted") {
		t.Fatalf("%+v", r)
	}
	r := s.call(t, 2, "git status >/dev/null; echo rc=$?", filepath.Join(ws, "sub"), readOnlyProfile, ws, 60000)
	t.Logf("%+v", r)
	if _, err := os.Stat(filepath.Join(outside, "fsmonitor")); err == nil {
		t.Error("the planted fsmonitor ran outside the sandbox in a later call")
	}
	if !strings.Contains(r.Output, "could write "+ws) {
		t.Errorf("no note on the refused escalation: %q", r.Output)
	}
}

// TestRedteamForbiddenByFile: a forbidden program stays forbidden under
// another name, through a link, the dynamic loader, a #! line and a
// memfd copy.
func TestRedteamForbiddenByFile(t *testing.T) {
	t.Parallel()
	ws := canonicalTemp(t)
	loader := ""
	for _, l := range []string{"/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1"} {
		if _, err := os.Stat(l); err == nil {
			loader = l
		}
	}
	script := fmt.Sprintf(`cp /usr/bin/touch tuch; ./tuch copy; echo rc=$?
ln -s /usr/bin/touch ls2; ./ls2 symlink; echo rc=$?
ln /usr/bin/touch hl 2>/dev/null && { ./hl hardlink; echo rc=$?; }
%[1]s /usr/bin/touch loader; echo rc=$?
%[1]s ./tuch loadercopy; echo rc=$?
printf '#!/usr/bin/touch shebang\n' > okname; chmod +x okname; ./okname; echo rc=$?
python3 -c 'import os; fd = os.memfd_create("okname"); os.write(fd, open("/usr/bin/touch", "rb").read()); os.execve(fd, ["okname", "memfd"], {})'; echo rc=$?
`, loader)
	s := startRedteam(t)
	r := s.call(t, 1, script, ws, workspaceProfile(ws), ws, 60000)
	t.Logf("%+v", r)
	for _, f := range []string{"copy", "symlink", "hardlink", "loader", "loadercopy", "shebang", "memfd"} {
		if f == "loader" && loader == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(ws, f)); err == nil {
			t.Errorf("%s: the forbidden touch ran", f)
		}
	}
}
