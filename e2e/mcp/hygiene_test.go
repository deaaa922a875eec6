package mcp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docs/shell-tool.md §9.14, §6.3: a relative program is resolved against the call's workdir,
// never the server's cwd (the reference runs the server-cwd copy,
// unsandboxed). A file in the workspace, which the sandbox can write, is
// never escalated either (§11.1): it runs in the sandbox, with a note.
func TestRelativeProgramResolvedInWorkdir(t *testing.T) {
	t.Parallel()
	oursOnly(t, "resolves a relative program against the server's cwd")
	srvCwd, err := os.MkdirTemp(workBase(), "mcp-e2e-cwd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(srvCwd) })
	writeFile(t, filepath.Join(srvCwd, "prog.sh"), "#!/bin/sh\necho server-cwd-copy\n", 0o755)
	s := start(t, opts{cwd: srvCwd, rules: defaultRules + `prefix_rule(pattern=["prog.sh"], decision="allow")` + "\n"})
	writeFile(t, filepath.Join(s.ws, "prog.sh"), "#!/bin/sh\necho workdir-copy; touch "+s.outside+"/escalated\n", 0o755)
	out := s.run("./prog.sh")
	if !strings.Contains(out.res.Output, "workdir-copy\n") || strings.Contains(out.res.Output, "server-cwd-copy") {
		t.Errorf("./prog.sh: %+v, want the workdir's copy", out.res)
	}
	if _, err := os.Stat(filepath.Join(s.outside, "escalated")); err == nil {
		t.Error("the workspace's ./prog.sh ran escalated")
	}
}

// docs/shell-tool.md §9.14, §3.3: stdout and stderr are aggregated in arrival order, escalated
// children's output included (the reference gives all stdout first).
func TestOutputArrivalOrder(t *testing.T) {
	t.Parallel()
	oursOnly(t, "all of stdout, then all of stderr")
	s := start(t, opts{})
	out := s.run(`echo a; echo b >&2; sh -c '` + s.esc("order") + `echo c; echo d >&2; echo e'; echo f >&2; echo g`)
	if want := "a\nb\nc\nd\ne\nf\ng\n"; out.res.Output != want {
		t.Errorf("output %q, want %q", out.res.Output, want)
	}
	s.escalated("order")
}

// docs/shell-tool.md §9.14, §6.3: an escalated child has only fds 0, 1 and 2, stdin being
// Bash's /dev/null (the reference leaks server fds into it).
func TestEscalatedFdHygiene(t *testing.T) {
	t.Parallel()
	oursOnly(t, "escalated children inherit server fds")
	s := start(t, opts{})
	out := s.run(`sh -c '` + s.esc("fds") + `ls /proc/$$/fd; readlink /proc/$$/fd/0'`)
	if want := "0\n1\n2\n/dev/null\n"; out.res.Output != want {
		t.Errorf("escalated sh: fds and stdin %q, want %q", out.res.Output, want)
	}
	s.escalated("fds")
}

// envOf runs `sh -c env` (escalated) after prefix in one call and returns
// the variables it saw.
func envOf(s *server, prefix string) map[string]string {
	s.t.Helper()
	out := s.run(prefix + `sh -c '` + s.esc("env") + `env'`)
	s.escalated("env")
	env := map[string]string{}
	for _, l := range strings.Split(out.res.Output, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			env[k] = v
		}
	}
	if len(env) == 0 {
		s.t.Fatalf("escalated env printed nothing: %+v", out.res)
	}
	return env
}

// docs/shell-tool.md §5, §11.2: the wrapper's own variables do not reach an escalated child;
// of what the shell exported, only the terminal and locale variables do.
func TestEscalatedEnvNoWrapperVariables(t *testing.T) {
	t.Parallel()
	s := start(t, opts{})
	env := envOf(s, `export FROM_SHELL=yes LC_ALL=C.UTF-8; `)
	for _, k := range []string{"CODEX_ESCALATE_SOCKET", "BASH_EXEC_WRAPPER", "EXEC_WRAPPER", "FROM_SHELL"} {
		if v, ok := env[k]; ok {
			t.Errorf("escalated child has %s=%s", k, v)
		}
	}
	if env["LC_ALL"] != "C.UTF-8" {
		t.Errorf("LC_ALL = %q, want C.UTF-8", env["LC_ALL"])
	}
}

// docs/shell-tool.md §9.14, §11.2: the escalated child's environment is the server's, not
// the sandbox's: a server variable the shell unset comes back, the
// shell's PATH and loader variables do not.
func TestEscalatedEnvIsTheServers(t *testing.T) {
	t.Parallel()
	oursOnly(t, "passes the sandbox's environment to escalated programs")
	s := start(t, opts{env: []string{"SERVER_VAR=server"}})
	env := envOf(s, `unset SERVER_VAR; export PATH=/evil:$PATH LD_PRELOAD=/nonexistent.so; `)
	if env["SERVER_VAR"] != "server" {
		t.Errorf("SERVER_VAR = %q, want the server's value", env["SERVER_VAR"])
	}
	if strings.Contains(env["PATH"], "/evil") || env["LD_PRELOAD"] != "" {
		t.Errorf("the shell's PATH %q or LD_PRELOAD %q reached the escalated child", env["PATH"], env["LD_PRELOAD"])
	}
}

// docs/shell-tool.md §9.14, §3.3: SIGPIPE is at its default in Bash, in programs run in the
// sandbox and in escalated ones: `yes | head -c1` ends quietly.
func TestSigpipeDefault(t *testing.T) {
	t.Parallel()
	oursOnly(t, "runs commands with SIGPIPE ignored")
	s := start(t, opts{})
	for _, cmd := range []string{
		`sh -c '` + s.esc("pipe") + `yes | head -c1'`, // escalated (sh is allowed)
		`dash -c 'yes | head -c1'`,                    // unmatched: in the sandbox
	} {
		if out := s.run(cmd); out.res.Output != "y" || out.res.ExitCode != 0 {
			t.Errorf("%s: %+v, want output \"y\" (no Broken pipe)", cmd, out.res)
		}
	}
	s.escalated("pipe")
}

// docs/shell-tool.md §9.14, §3.3: a non-login call does not read ~/.bashrc, even under the
// sandbox and without SHLVL.
func TestNoBashrcNoise(t *testing.T) {
	t.Parallel()
	oursOnly(t, "its sandboxed bash -c sources ~/.bashrc")
	s := start(t, opts{bashrc: "echo BASHRC-NOISE\n"})
	if out := s.run("echo hi"); out.res.Output != "hi\n" {
		t.Errorf("output %q, want \"hi\\n\"", out.res.Output)
	}
}

// docs/shell-tool.md §9.14, §6.3, §11.1: argv[0] is passed as the shell gave it, escalated and
// in the sandbox, and the rule still matches the real program; an escalation needs an argv[0]
// naming the program (git, busybox and the like act by it), so `exec -a custom0 sh` runs in
// the sandbox instead.
func TestArgv0Kept(t *testing.T) {
	t.Parallel()
	s := start(t, opts{})
	for cmd, want := range map[string]string{
		`(exec -a /custom/sh sh -c 'echo "argv0=$0"; touch ` + s.outside + `/argv0')`: "argv0=/custom/sh\n",
		`(exec -a custom1 dash -c 'echo "argv0=$0"')`:                                 "argv0=custom1\n",
	} {
		if out := s.run(cmd); out.res.Output != want {
			t.Errorf("%s: output %q, want %q", cmd, out.res.Output, want)
		}
	}
	if _, err := os.Stat(filepath.Join(s.outside, "argv0")); err != nil {
		t.Errorf("exec -a /custom/sh sh was not escalated by the sh rule: %v", err)
	}
	s.run(`(exec -a custom0 sh -c 'touch ` + s.outside + `/custom0' 2>/dev/null)`)
	if _, err := os.Stat(filepath.Join(s.outside, "custom0")); err == nil {
		t.Error("exec -a custom0 sh escalated")
	}
}
