package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The kernel-level interception (docs/shell-tool.md §10) through the
// built binary's exec-mcp-server with no flags: Debian's /bin/bash, every
// exec of the call traced.

// interceptRules forbid touch and allow (escalate) mkdir and prog.sh.
const interceptRules = `prefix_rule(pattern=["touch"], decision="forbidden")
prefix_rule(pattern=["mkdir"], decision="allow")
prefix_rule(pattern=["prog.sh"], decision="allow")
`

// startIntercept starts exec-mcp-server without flags, with
// interceptRules in its CODEX_HOME and its working directory cwd.
func startIntercept(t *testing.T) *mcpServer {
	t.Helper()
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "rules"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "rules", "test.rules"), []byte(interceptRules), 0o644); err != nil {
		t.Fatal(err)
	}
	return startMCPWith(t, []string{"CODEX_HOME=" + home})
}

// readOnlyProfile is Codex 0.169.0's read-only permission profile.
const readOnlyProfile = `{"type":"managed","file_system":{"type":"restricted","entries":[{"path":{"type":"special","value":{"kind":"root"}},"access":"read"}]},"network":"restricted"}`

// workspaceProfile is workspace-write on ws.
func workspaceProfile(ws string) string {
	return fmt.Sprintf(`{"type":"managed","file_system":{"type":"restricted","entries":[{"path":{"type":"special","value":{"kind":"root"}},"access":"read"},{"path":{"type":"path","path":%q},"access":"write"}]},"network":"restricted"}`, ws)
}

// execPaths are the ways a program PROG ARG can be started: by Bash
// itself, and by every kind of other program. %[1]s is the program's
// name, %[2]s its argument. The shebang script is ./s.sh in the workdir,
// written by the test.
// failRC is the status the starter reports when the program exits 1
// (xargs: 123; find -exec ... ';' ignores it).
var execPaths = []struct {
	name, cmd string
	failRC    int
}{
	{"direct", `%[1]s %[2]s`, 1},
	{"sh -c", `sh -c '%[1]s %[2]s'`, 1},
	{"bash -c", `bash -c '%[1]s %[2]s'`, 1},
	{"dash -c", `dash -c '%[1]s %[2]s'`, 1},
	{"env", `env %[1]s %[2]s`, 1},
	{"xargs", `echo %[2]s | xargs %[1]s`, 123},
	{"find -exec", `find / -maxdepth 0 -exec %[1]s %[2]s ';'`, 0},
	{"timeout", `timeout 20 %[1]s %[2]s`, 1},
	{"nohup", `nohup %[1]s %[2]s`, 1},
	{"shebang", `./s.sh%.0[1]s%.0[2]s`, 1},
	{"python os.execv", `python3 -c 'import os, shutil; os.execv(shutil.which("%[1]s"), ["%[1]s", "%[2]s"])'`, 1},
	{"python fexecve (execveat AT_EMPTY_PATH)", `python3 -c 'import os, shutil; os.execve(os.open(shutil.which("%[1]s"), os.O_RDONLY), ["%[1]s", "%[2]s"], dict(os.environ))'`, 1},
	{"perl exec", `perl -e 'exec "%[1]s", "%[2]s"'`, 1},
	{"unset wrapper", `unset BASH_EXEC_WRAPPER EXEC_WRAPPER; %[1]s %[2]s`, 1},
}

// script runs every path for prog with arguments dir/1, dir/2, ...,
// printing "rc=N" after each; shebang scripts are written in ws.
func interceptScript(t *testing.T, ws, prog, dir string) string {
	t.Helper()
	var b strings.Builder
	for i, p := range execPaths {
		arg := fmt.Sprintf("%s/%d", dir, i)
		if p.name == "shebang" {
			if err := os.WriteFile(filepath.Join(ws, "s.sh"), []byte("#!/bin/sh\n"+prog+" "+arg+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		fmt.Fprintf(&b, p.cmd+"; echo rc=$?\n", prog, arg)
	}
	b.WriteString("echo end\n")
	return b.String()
}

// TestInterceptForbiddenEveryPath: a forbidden program is denied whoever
// starts it, with the exact message and exit code 1 for that command, and
// the script goes on; it never ran (its file is absent, although the
// sandbox would have let it write there).
func TestInterceptForbiddenEveryPath(t *testing.T) {
	t.Parallel()
	ws := canonicalTemp(t)
	s := startIntercept(t)
	r := s.call(t, 1, interceptScript(t, ws, "touch", ws), ws, workspaceProfile(ws), ws, 60000)
	var want strings.Builder
	for _, p := range execPaths {
		fmt.Fprintf(&want, "Execution denied: Execution forbidden by policy\nrc=%d\n", p.failRC)
	}
	want.WriteString("end\n")
	if r.ExitCode != 0 || r.Output != want.String() {
		t.Errorf("%+v, want %q", r, want.String())
	}
	for i, p := range execPaths {
		if _, err := os.Stat(fmt.Sprintf("%s/%d", ws, i)); err == nil {
			t.Errorf("%s: the forbidden touch ran", p.name)
		}
	}
}

// TestInterceptAllowEscalatesEveryPath: an allowed program reached by any
// path runs outside the read-only sandbox: its directory appears outside
// every writable root.
func TestInterceptAllowEscalatesEveryPath(t *testing.T) {
	t.Parallel()
	ws := canonicalTemp(t)
	outside := canonicalTemp(t)
	s := startIntercept(t)
	r := s.call(t, 1, interceptScript(t, ws, "mkdir", outside), ws, readOnlyProfile, ws, 60000)
	if r.ExitCode != 0 || r.Output != strings.Repeat("rc=0\n", len(execPaths))+"end\n" {
		t.Errorf("%+v", r)
	}
	for i, p := range execPaths {
		if st, err := os.Stat(fmt.Sprintf("%s/%d", outside, i)); err != nil || !st.IsDir() {
			t.Errorf("%s: the allowed mkdir did not escalate: %v", p.name, err)
		}
	}
}

// TestInterceptRelativeProgram: ./prog.sh with an allow rule for prog.sh
// is the prog.sh of the command's working directory, never the server's;
// being a file the sandbox could have written, it runs in the sandbox
// (docs/shell-tool.md §11.1), with a note.
func TestInterceptRelativeProgram(t *testing.T) {
	t.Parallel()
	ws := canonicalTemp(t)
	srv := canonicalTemp(t)
	for dir, who := range map[string]string{ws: "workdir", srv: "server"} {
		if err := os.WriteFile(filepath.Join(dir, "prog.sh"), []byte("#!/bin/sh\necho "+who+"-prog\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s := startIntercept(t)
	r := s.call(t, 1, "./prog.sh; cd / && "+ws+"/prog.sh", ws, readOnlyProfile, ws, 20000)
	if r.ExitCode != 0 || strings.Count(r.Output, "workdir-prog\n") != 2 || strings.Contains(r.Output, "server-prog") ||
		strings.Count(r.Output, "prog.sh not escalated") != 2 {
		t.Errorf("%+v", r)
	}
}

// TestInterceptRacingArgv: a multi-threaded process whose other thread
// rewrites the exec path after the decision (allowed true → forbidden
// touch) is killed before touch runs an instruction.
func TestInterceptRacingArgv(t *testing.T) {
	ws := canonicalTemp(t)
	marker := filepath.Join(ws, "raced")
	racer := `import ctypes, threading
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(b"/usr/bin/true", 32)
a, b = b"rue\0\0", b"ouch\0"
def flip():
    while True:
        ctypes.memmove(ctypes.addressof(buf) + 10, b, 5)
        ctypes.memmove(ctypes.addressof(buf) + 10, a, 5)
threading.Thread(target=flip, daemon=True).start()
argv = (ctypes.c_char_p * 3)(b"x", b"` + marker + `", None)
libc.execve(buf, argv, (ctypes.c_char_p * 1)(None))
`
	if err := os.WriteFile(filepath.Join(ws, "racer.py"), []byte(racer), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startIntercept(t)
	r := s.call(t, 1, "for i in $(seq 60); do python3 racer.py 2>/dev/null; echo status=$?; done", ws, workspaceProfile(ws), ws, 120000)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("touch ran: the racing exec was not stopped")
	}
	counts := map[string]int{}
	for _, l := range strings.Split(r.Output, "\n") {
		if v, ok := strings.CutPrefix(l, "status="); ok {
			counts[v]++
		}
	}
	t.Logf("statuses %v (0: true ran; 1: touch denied; 137: killed at the exec event)", counts)
	if counts["0"]+counts["1"]+counts["137"] != 60 {
		t.Errorf("statuses %v: %q", counts, r.Output)
	}
}

// TestInterceptShellsAndRobustness: dash and zsh (when installed) are
// intercepted; hundreds of forks, python threads, posix_spawn, a Go
// program and a ptrace attempt (denied) all work under the tracer; the
// call leaves no zombie child in the server.
func TestInterceptShellsAndRobustness(t *testing.T) {
	t.Parallel()
	ws := canonicalTemp(t)
	s := startIntercept(t)
	script := `dash -c 'touch x'; echo dash=$?
for i in $(seq 500); do /bin/true; done; echo forks
python3 -c '
import os, threading, subprocess, ctypes
def run(): subprocess.run(["/bin/true"], check=True)
ts = [threading.Thread(target=run) for _ in range(50)]
[t.start() for t in ts]; [t.join() for t in ts]
print("py threads", flush=True)
os.waitpid(os.posix_spawn("/bin/echo", ["echo", "spawned"], dict(os.environ)), 0)
libc = ctypes.CDLL(None, use_errno=True)
print("ptrace", libc.ptrace(0, 0, 0, 0), ctypes.get_errno(), flush=True)
'
` + binary + ` --version >/dev/null && echo go-ok`
	want := "Execution denied: Execution forbidden by policy\ndash=1\nforks\npy threads\nspawned\nptrace -1 1\ngo-ok\n"
	if _, err := exec.LookPath("zsh"); err == nil {
		script += "\nzsh -c 'touch x'; echo zsh=$?"
		want += "Execution denied: Execution forbidden by policy\nzsh=1\n"
	} else {
		t.Log("zsh not installed")
	}
	start := time.Now()
	r := s.call(t, 1, script, ws, workspaceProfile(ws), ws, 120000)
	t.Logf("took %v", time.Since(start))
	if r.ExitCode != 0 || r.Output != want {
		t.Errorf("%+v, want %q", r, want)
	}
	if z := zombieChildren(s.pid); len(z) > 0 {
		t.Errorf("zombie children of the server after the call: %v", z)
	}
}

// zombieChildren lists pid's children in state Z.
func zombieChildren(pid int) []string {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []string
	for _, f := range tasks {
		data, _ := os.ReadFile(f)
		for _, c := range strings.Fields(string(data)) {
			st, _ := os.ReadFile("/proc/" + c + "/stat")
			if i := strings.LastIndexByte(string(st), ')'); i > 0 && len(st) > i+2 && st[i+2] == 'Z' {
				out = append(out, c)
			}
		}
	}
	return out
}

// canonicalTemp is a fresh temporary directory without symlinks.
func canonicalTemp(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// trustedDir is a fresh directory that qualifies for escalation
// (docs/shell-tool.md §11.1): below /var/lib, owned by root, writable by
// nobody else. It needs root.
func trustedDir(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a trusted directory for escalated test programs needs root")
	}
	d, err := os.MkdirTemp("/var/lib", "codex-e2e-")
	if err != nil {
		t.Skipf("no trusted directory: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// startMCPRules starts exec-mcp-server with rules in its CODEX_HOME.
func startMCPRules(t *testing.T, rules string, args ...string) *mcpServer {
	t.Helper()
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "rules"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "rules", "test.rules"), []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	return startMCPWith(t, []string{"CODEX_HOME=" + home}, args...)
}

// TestInterceptEscalatedLifecycle: an escalated program's death by signal
// gives 128+N, the command waits for it, and a call timeout kills it (it
// never gets to write what it would after the timeout). The program is
// pinned by host_executable() in a trusted directory.
func TestInterceptEscalatedLifecycle(t *testing.T) {
	t.Parallel()
	ws := canonicalTemp(t)
	outside := canonicalTemp(t)
	dir := trustedDir(t)
	prog := filepath.Join(dir, "prog.sh")
	body := "#!/bin/sh\ncase $1 in kill) kill -USR1 $$;; slow) sleep 1; echo slow-done;; late) sleep 2; mkdir " + outside + "/late;; esac\n"
	if err := os.WriteFile(prog, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	s := startMCPRules(t, interceptRules+fmt.Sprintf("host_executable(name=%q, paths=[%q])\n", "prog.sh", prog))
	r := s.call(t, 1, prog+" kill; echo rc=$?; "+prog+" slow; echo after", ws, readOnlyProfile, ws, 20000)
	if r.ExitCode != 0 || r.Output != "rc=138\nslow-done\nafter\n" {
		t.Errorf("%+v", r)
	}
	r = s.call(t, 2, prog+" late", ws, readOnlyProfile, ws, 500)
	if !r.TimedOut || r.ExitCode != 124 {
		t.Errorf("%+v", r)
	}
	time.Sleep(2500 * time.Millisecond)
	if _, err := os.Stat(filepath.Join(outside, "late")); err == nil {
		t.Error("the escalated program outlived the call's timeout")
	}
}

// TestInterceptOtherShells: the server's shell may be dash (or zsh when
// installed): its execs are intercepted the same way.
func TestInterceptOtherShells(t *testing.T) {
	t.Parallel()
	shells := []string{"/bin/dash"}
	if z, err := exec.LookPath("zsh"); err == nil {
		shells = append(shells, z)
	}
	for _, sh := range shells {
		home := t.TempDir()
		if err := os.MkdirAll(filepath.Join(home, "rules"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, "rules", "test.rules"), []byte(interceptRules), 0o644); err != nil {
			t.Fatal(err)
		}
		s := startMCPWith(t, []string{"CODEX_HOME=" + home}, "--bash", sh)
		ws := canonicalTemp(t)
		r := s.call(t, 1, "touch x; echo rc=$?; env touch y; echo rc=$?", ws, workspaceProfile(ws), ws, 20000)
		const want = "Execution denied: Execution forbidden by policy\nrc=1\nExecution denied: Execution forbidden by policy\nrc=1\n"
		if r.ExitCode != 0 || r.Output != want {
			t.Errorf("%s: %+v", sh, r)
		}
	}
}
