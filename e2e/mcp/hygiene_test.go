package mcp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docs/shell-tool.md §9.14, §6.3: a relative program is resolved against the call's workdir,
// never the server's cwd (the reference runs the server-cwd copy,
// unsandboxed).
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
	if out.res.Output != "workdir-copy\n" || out.res.ExitCode != 0 {
		t.Errorf("./prog.sh: %+v, want the workdir's copy", out.res)
	}
	if _, err := os.Stat(filepath.Join(s.outside, "escalated")); err != nil {
		t.Errorf("the allowed ./prog.sh did not run escalated: %v", err)
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

// docs/shell-tool.md §5: the wrapper's own variables do not reach an escalated child, and what
// the shell exported does.
func TestEscalatedEnvNoWrapperVariables(t *testing.T) {
	t.Parallel()
	s := start(t, opts{})
	env := envOf(s, `export FROM_SHELL=yes; `)
	for _, k := range []string{"CODEX_ESCALATE_SOCKET", "BASH_EXEC_WRAPPER", "EXEC_WRAPPER"} {
		if v, ok := env[k]; ok {
			t.Errorf("escalated child has %s=%s", k, v)
		}
	}
	if env["FROM_SHELL"] != "yes" {
		t.Errorf("FROM_SHELL = %q, want yes", env["FROM_SHELL"])
	}
}

// docs/shell-tool.md §9.14, §6.3: the escalated child's environment is the request's exactly:
// a variable the shell unset does not come back from the server's.
func TestEscalatedEnvExact(t *testing.T) {
	t.Parallel()
	oursOnly(t, "overlays the request env on the server's")
	s := start(t, opts{env: []string{"LEAK_ME=server"}})
	env := envOf(s, `unset LEAK_ME; `)
	if v, ok := env["LEAK_ME"]; ok {
		t.Errorf("LEAK_ME=%s came back from the server's environment", v)
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

// docs/shell-tool.md §9.14, §6.3: argv[0] is passed as the shell gave it, escalated and in the
// sandbox, and the rule still matches the real program.
func TestArgv0Kept(t *testing.T) {
	t.Parallel()
	s := start(t, opts{})
	for cmd, want := range map[string]string{
		`(exec -a custom0 sh -c 'echo "argv0=$0"; touch ` + s.outside + `/argv0')`: "argv0=custom0\n",
		`(exec -a custom1 dash -c 'echo "argv0=$0"')`:                              "argv0=custom1\n",
	} {
		if out := s.run(cmd); out.res.Output != want {
			t.Errorf("%s: output %q, want %q", cmd, out.res.Output, want)
		}
	}
	if _, err := os.Stat(filepath.Join(s.outside, "argv0")); err != nil {
		t.Errorf("exec -a custom0 sh was not escalated by the sh rule: %v", err)
	}
}
