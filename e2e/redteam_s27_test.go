package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
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

// escalateClient is a Python client of the escalate socket protocol
// (docs/shell-tool.md §6) run by a command of a wrapper-mode call: it
// sends EscalateRequest REQ (JSON, argv[1]), prints the answer, runs the
// shell command argv[2] (the moment between the decision and the start),
// then sends its stdio and prints the SuperExecResult.
const escalateClient = `import array, json, os, socket, struct, subprocess, sys
fd = int(os.environ["CODEX_ESCALATE_SOCKET"])
dg = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM, 0, fileno=fd)
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
dg.sendmsg([b"\0"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [b.fileno()]))])
b.close()
def send(obj, fds=()):
    p = json.dumps(obj).encode()
    anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
    a.sendmsg([struct.pack("<I", len(p)) + p], anc)
def recvall(n):
    buf = b""
    while len(buf) < n:
        c = a.recv(n - len(buf))
        if not c:
            sys.exit("closed")
        buf += c
    return buf
def recv():
    return json.loads(recvall(struct.unpack("<I", recvall(4))[0]))
send(json.loads(sys.argv[1]))
r = recv()
print("answer", json.dumps(r), flush=True)
if r.get("action") != "Escalate":
    sys.exit(0)
subprocess.run(["/bin/sh", "-c", sys.argv[2]])
send({"fds": [0, 1, 2]}, [0, 1, 2])
print("result", json.dumps(recv()), flush=True)
`

// TestRedteamWrapperWorkdirSwap: in wrapper mode the request's workdir
// is the command's word. It names $WS/link, a symlink to / (a directory
// the command cannot write: the escalation of `git status` is allowed);
// between the Escalate answer and the start, which the client chooses,
// the command points the link at a repository it made, whose
// core.fsmonitor is its own code. Before the fix the escalated git
// started in the path as given, in the planted repository, and ran that
// code outside the sandbox.
func TestRedteamWrapperWorkdirSwap(t *testing.T) {
	t.Parallel()
	needGit(t)
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	ws := canonicalTemp(t)
	outside := canonicalTemp(t)
	if err := os.WriteFile(filepath.Join(ws, "client.py"), []byte(escalateClient), 0o644); err != nil {
		t.Fatal(err)
	}
	req := fmt.Sprintf(`{"file":"/usr/bin/git","argv":["git","status"],"workdir":%q,"env":{}}`, ws+"/link")
	script := fmt.Sprintf(`git init -q repo && git -C repo config core.fsmonitor 'echo x > %[1]s/fsmonitor; false' || exit 9
ln -s / link || exit 9
/usr/bin/python3 client.py '%[2]s' 'ln -sfn %[3]s/repo %[3]s/link'
`, outside, req, ws)
	s := startMCPRules(t, redteamRules, "--intercept", "wrapper", "--bash", "/bin/bash")
	r := s.call(t, 1, script, ws, workspaceProfile(ws), ws, 60000)
	t.Logf("%+v", r)
	if _, err := os.Stat(filepath.Join(outside, "fsmonitor")); err == nil {
		t.Errorf("the escalated git started in the planted repository the workdir link was swapped to: %q", r.Output)
	}
}

// TestRedteamSymlinkNameSelectsGitBuiltin: git runs the builtin its
// argv[0] names, so an escalated git's argv[0] must name git
// (TestReviewArgv0SelectsGitBuiltin); the check took the name of the
// path the command exec'd as the file's own name. A symlink
// ws/git-archive -> /usr/bin/git, run as `git-archive status --remote=R
// --exec=CMD`, is judged as git (by identity) under the rule for `git
// status`, its argv[0] is its path's name, and before the fix git
// archive ran CMD through the shell outside the sandbox.
func TestRedteamSymlinkNameSelectsGitBuiltin(t *testing.T) {
	t.Parallel()
	needGit(t)
	git, err := filepath.EvalSymlinks("/usr/bin/git")
	if err != nil {
		t.Skip(err)
	}
	ws := canonicalTemp(t)
	outside := canonicalTemp(t)
	script := fmt.Sprintf(`mkdir -p bin && ln -s %[3]s bin/git-archive || exit 9
export PATH=$PWD/bin:$PATH
cd / && git-archive status --remote=%[2]s --exec='id > %[1]s/argv0; false #'; echo rc=$?
`, outside, ws, git)
	s := startRedteam(t)
	r := s.call(t, 1, script, ws, workspaceProfile(ws), ws, 60000)
	t.Logf("%+v", r)
	if b, err := os.ReadFile(filepath.Join(outside, "argv0")); err == nil {
		t.Errorf("a symlink named git-archive: the command's shell code ran outside the sandbox: %q", b)
	}
}

// TestRedteamMultiCallOtherName: vim is one file under many names (vim,
// rvim, view, ex), and acts by argv[0]: as rvim it runs no shell
// command. A rule allowing rvim (restricted, so trusted with any
// argument) was met by `vim -es -c '!CMD'`: the file is rvim's, so the
// exec was judged allowed as rvim, and its argv[0] vim, the name of the
// path exec'd (and a name the file has in /usr/bin), passed the check:
// before the fix an unrestricted vim ran CMD outside the sandbox.
func TestRedteamMultiCallOtherName(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"/usr/bin/vim", "/usr/bin/rvim"} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("no %s", p)
		}
	}
	if a, _ := filepath.EvalSymlinks("/usr/bin/vim"); a != mustEval(t, "/usr/bin/rvim") {
		t.Skip("vim and rvim are different files here")
	}
	ws := canonicalTemp(t)
	outside := canonicalTemp(t)
	script := fmt.Sprintf(`cd / && vim -es -c '!id > %[1]s/vim' -c 'qa!'; echo rc=$?
rvim -es -c '!id > %[1]s/rvim' -c 'qa!'; echo rc=$?
(exec -a rvim/ rvim -es -c '!id > %[1]s/slash' -c 'qa!'); echo rc=$?
`, outside)
	s := startMCPRules(t, `prefix_rule(pattern=["rvim"], decision="allow")`+"\n")
	r := s.call(t, 1, script, ws, workspaceProfile(ws), ws, 60000)
	t.Logf("%+v", r)
	if b, err := os.ReadFile(filepath.Join(outside, "vim")); err == nil {
		t.Errorf("vim, allowed as rvim, ran a shell command outside the sandbox: %q", b)
	}
	if _, err := os.Stat(filepath.Join(outside, "rvim")); err == nil {
		t.Error("rvim ran a shell command")
	}
	// Review s27 round 2: vim takes its name from what follows the last
	// slash of argv[0], nothing for "rvim/", which filepath.Base calls
	// rvim: unrestricted.
	if b, err := os.ReadFile(filepath.Join(outside, "slash")); err == nil {
		t.Errorf("rvim as rvim/ (vim, unrestricted) ran a shell command outside the sandbox: %q", b)
	}
}

func mustEval(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Skip(err)
	}
	return r
}

// TestRedteamPlantedInEarlierCall: a program file is escalated only
// from where no sandboxed call could have written it. The server's PATH
// holds TRUSTED/bin (a root-owned directory, as a ~/.cargo/bin or a
// project's tool folder may be); a first call may write TRUSTED and
// plants TRUSTED/bin/git there; a second, read-only, call runs `git
// status` from /. The file's place was checked against the writable
// roots of the call running it only, so before the fix the planted
// script ran outside the sandbox in the second call (as the working
// directory and HOME are checked against the roots of every call).
func TestRedteamPlantedInEarlierCall(t *testing.T) {
	t.Parallel()
	trusted := trustedDir(t)
	outside := canonicalTemp(t)
	ws := canonicalTemp(t)
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "rules"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "rules", "test.rules"), []byte(redteamRules), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(trusted, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := startMCPWith(t, []string{"CODEX_HOME=" + home, "PATH=" + trusted + "/bin:/usr/bin:/bin"})
	plant := fmt.Sprintf(`printf '#!/bin/sh\necho planted > %[2]s/planted\n' > %[1]s/bin/git && chmod 755 %[1]s/bin/git && echo planted-ok`, trusted, outside)
	r := s.call(t, 1, plant, ws, workspaceProfile(trusted), ws, 60000)
	if !strings.Contains(r.Output, "planted-ok") {
		t.Fatalf("planting: %+v", r)
	}
	r = s.call(t, 2, "cd / && git status; echo rc=$?", ws, readOnlyProfile, ws, 60000)
	t.Logf("%+v", r)
	if _, err := os.Stat(filepath.Join(outside, "planted")); err == nil {
		t.Errorf("the git planted by an earlier call ran outside the sandbox: %q", r.Output)
	}
}

// TestRedteamServerPathPlantable: an escalated program gets the server's
// PATH, and what it runs by name is found there, outside the sandbox and
// unjudged. A PATH entry a sandboxed call can write (WS/bin here, ahead
// of /usr/bin) is a place to plant those programs: under a rule allowing
// `env uname`, the escalated env ran the command's WS/bin/uname before
// the fix. Such an escalation now runs in the sandbox, as one whose HOME
// is writable does.
func TestRedteamServerPathPlantable(t *testing.T) {
	t.Parallel()
	ws := canonicalTemp(t)
	outside := canonicalTemp(t)
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "rules"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "rules", "test.rules"), []byte(`prefix_rule(pattern=["env", "uname"], decision="allow")`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startMCPWith(t, []string{"CODEX_HOME=" + home, "PATH=" + ws + "/bin:/usr/bin:/bin"})
	script := fmt.Sprintf(`mkdir -p bin && printf '#!/bin/sh\necho planted > %[1]s/planted\n' > bin/uname && chmod 755 bin/uname || exit 9
cd / && /usr/bin/env uname; echo rc=$?
`, outside)
	r := s.call(t, 1, script, ws, workspaceProfile(ws), ws, 60000)
	t.Logf("%+v", r)
	if _, err := os.Stat(filepath.Join(outside, "planted")); err == nil {
		t.Errorf("the escalated env ran the uname the command planted in the server's PATH: %q", r.Output)
	}
}

// TestRedteamWrapperWorkdirHidden: in wrapper mode the request's workdir
// is the command's word, and it may name a directory the sandbox hides
// (a deny entry): an allowed `git status` escalated there listed the
// hidden repository's files to the command before the fix. The workdir
// must be where the requesting process itself is (its cwd, the same
// directory), as in ptrace mode, where it is read from the process.
func TestRedteamWrapperWorkdirHidden(t *testing.T) {
	t.Parallel()
	needGit(t)
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	ws := canonicalTemp(t)
	secret := canonicalTemp(t)
	if out, err := exec.Command("git", "init", "-q", secret).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	if err := os.WriteFile(filepath.Join(secret, "hidden-secret-name.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "client.py"), []byte(escalateClient), 0o644); err != nil {
		t.Fatal(err)
	}
	profile := fmt.Sprintf(`{"type":"managed","file_system":{"type":"restricted","entries":[{"path":{"type":"special","value":{"kind":"root"}},"access":"read"},{"path":{"type":"path","path":%q},"access":"write"},{"path":{"type":"path","path":%q},"access":"deny"}]},"network":"restricted"}`, ws, secret)
	req := fmt.Sprintf(`{"file":"/usr/bin/git","argv":["git","status","--porcelain","--untracked-files=all"],"workdir":%q,"env":{}}`, secret)
	script := fmt.Sprintf(`ls %[1]s >/dev/null 2>&1 && echo visible
cd / && /usr/bin/python3 %[2]s/client.py '%[3]s' true
`, secret, ws, req)
	s := startMCPRules(t, redteamRules, "--intercept", "wrapper", "--bash", "/bin/bash")
	r := s.call(t, 1, script, ws, profile, ws, 60000)
	t.Logf("%+v", r)
	if strings.Contains(r.Output, "visible") {
		t.Fatal("the deny entry does not hide the directory")
	}
	if strings.Contains(r.Output, "hidden-secret-name") {
		t.Errorf("an escalated git status in a directory the sandbox hides listed it: %q", r.Output)
	}
}

// TestRedteamHomeConfigWritable: an escalated program reads its user
// configuration below the server's HOME (git: ~/.config/git/config,
// ~/.gitconfig; Python: ~/.local/lib/…/usercustomize.py; cargo:
// ~/.cargo/config.toml). HOME itself was checked, a writable root below
// it was not: with HOME/.config writable (a profile may allow a tool's
// configuration folder), the command planted a global core.fsmonitor,
// and an allowed `git status` in a repository it cannot write ran it
// outside the sandbox before the fix.
func TestRedteamHomeConfigWritable(t *testing.T) {
	t.Parallel()
	needGit(t)
	outside := canonicalTemp(t)
	repo := canonicalTemp(t)
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	home := canonicalTemp(t)
	cfg := filepath.Join(home, ".config")
	for _, d := range []string{filepath.Join(home, "rules"), cfg} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(home, "rules", "test.rules"), []byte(redteamRules), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startMCPWith(t, []string{"CODEX_HOME=" + home, "HOME=" + home})
	script := fmt.Sprintf(`mkdir -p %[1]s/git && printf '[core]\n\tfsmonitor = "echo x > %[2]s/fsmonitor; false"\n' > %[1]s/git/config || exit 9
git status >/dev/null; echo rc=$?
`, cfg, outside)
	r := s.call(t, 1, script, repo, workspaceProfile(cfg), repo, 60000)
	t.Logf("%+v", r)
	if _, err := os.Stat(filepath.Join(outside, "fsmonitor")); err == nil {
		t.Errorf("the escalated git ran the configuration planted in the server's ~/.config: %q", r.Output)
	}
}

// pagerClient runs `git log` on a terminal it makes (a pty of the
// sandbox's own devpts) and types a less command into it: `!CMD` runs
// CMD through a shell. Its argument is CMD.
const pagerClient = `import os, pty, select, sys, time
m, s = pty.openpty()
pid = os.fork()
if pid == 0:
    os.dup2(s, 0); os.dup2(s, 1); os.dup2(s, 2)
    os.execvp("git", ["git", "log"])
os.close(s)
def drain(secs):
    end = time.time() + secs
    while time.time() < end:
        r, _, _ = select.select([m], [], [], 0.1)
        if r:
            try:
                os.read(m, 65536)
            except OSError:
                return
        if os.waitpid(pid, os.WNOHANG)[0]:
            return True
drain(1)
os.write(m, ("!" + sys.argv[1] + "\n").encode())
drain(1)
os.write(m, b"\nq")
if not drain(3):
    os.kill(pid, 9)
    os.waitpid(pid, 0)
print("client done")
`

// TestRedteamEscalatedOnTerminal: an escalated program runs on the
// command's descriptors 0-2, and when they are a terminal, programs turn
// interactive: `git log` pipes its output through less, and less runs
// any `!CMD` typed at it through a shell. The command makes a pty in its
// sandbox, runs the allowed `git log` on it (in a repository it cannot
// write) and types `!CMD`: before the fix CMD ran outside the sandbox,
// in less, in the escalated git. The server runs without a controlling
// terminal (as a client's stdio server does), so less reads its
// commands from descriptor 2.
func TestRedteamEscalatedOnTerminal(t *testing.T) {
	t.Parallel()
	needGit(t)
	if _, err := os.Stat("/usr/bin/less"); err != nil {
		t.Skip("no /usr/bin/less")
	}
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	ws := canonicalTemp(t)
	outside := canonicalTemp(t)
	repo := canonicalTemp(t)
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	for i := 0; i < 60; i++ { // more than a screen: less -F does not quit at once
		c := exec.Command("git", "-C", repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", fmt.Sprintf("commit %d", i))
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("git commit: %v %s", err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(ws, "pager.py"), []byte(pagerClient), 0o644); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "rules"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "rules", "test.rules"), []byte(`prefix_rule(pattern=["git", "log"], decision="allow")`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", `trap '' PIPE; exec "$0" exec-mcp-server "$@"`, binary)
	cmd.Env = []string{raceEnv, "PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "CODEX_HOME=" + home}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // no controlling terminal
	s := startMCPCmd(t, cmd)
	script := fmt.Sprintf("cd %s && TERM=xterm /usr/bin/python3 %s/pager.py 'id > %s/pager'", repo, ws, outside)
	r := s.call(t, 1, script, ws, workspaceProfile(ws), ws, 30000)
	t.Logf("%+v", r)
	if b, err := os.ReadFile(filepath.Join(outside, "pager")); err == nil {
		t.Errorf("a command typed at the escalated git log's pager ran outside the sandbox: %q", b)
	}
}

// TestRedteamEscalatedEditorOnStdin: an escalated program runs on the
// command's stdin, and an editor it starts reads its keys from there,
// terminal or not. Under a rule allowing `git commit` (the usual reason
// to escalate git: the sandbox keeps .git read-only), `git commit`
// without -m in a repository the command cannot write starts vi on the
// command's pipe, and a piped `:!CMD` ran CMD outside the sandbox before
// the fix.
func TestRedteamEscalatedEditorOnStdin(t *testing.T) {
	t.Parallel()
	needGit(t)
	if _, err := exec.LookPath("vi"); err != nil {
		t.Skip("no vi")
	}
	ws := canonicalTemp(t)
	outside := canonicalTemp(t)
	repo := canonicalTemp(t)
	for _, args := range [][]string{{"init", "-q", repo}, {"-C", repo, "config", "user.name", "t"}, {"-C", repo, "config", "user.email", "t@t"}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	s := startMCPRules(t, `prefix_rule(pattern=["git", "commit"], decision="allow")`+"\n")
	script := fmt.Sprintf(`printf ':!id > %s/editor\n:q!\n' | TERM=xterm git commit --allow-empty >/dev/null 2>&1; echo rc=$?`, outside)
	r := s.call(t, 1, script, repo, workspaceProfile(ws), ws, 30000)
	t.Logf("%+v", r)
	if b, err := os.ReadFile(filepath.Join(outside, "editor")); err == nil {
		t.Errorf("a command piped to the escalated git commit's editor ran outside the sandbox: %q", b)
	}
}
