package e2e

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runCLI runs the binary with args (stdin empty, a clean environment plus
// env) and returns its stdout, stderr and exit status.
func runCLI(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append([]string{raceEnv, "PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("%v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// TestCLIUsageErrors: every kind of usage mistake, on every command, is
// one line on stderr that names the mistake and the command's --help, exit
// status 2, and nothing on stdout (the protocol channel in stdio mode).
func TestCLIUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args       []string
		help, want string
	}{
		{[]string{}, "codex", "missing command"},
		{[]string{"frob"}, "codex", `unknown command "frob"`},
		{[]string{"--frob"}, "codex", "unknown flag --frob"},
		{[]string{"help", "frob"}, "codex", `unknown command "frob"`},
		{[]string{"exec-server", "--frob"}, "codex exec-server", "unknown flag --frob"},
		{[]string{"exec-server", "-x"}, "codex exec-server", "unknown flag -x"},
		{[]string{"exec-server", "--session-ttl", "soon"}, "codex exec-server", `invalid value "soon" for --session-ttl`},
		{[]string{"exec-server", "--max-processes", "many"}, "codex exec-server", `invalid value "many" for --max-processes`},
		{[]string{"exec-server", "--listen"}, "codex exec-server", "flag --listen needs a value"},
		{[]string{"exec-server", "--listen", "ws://localhost:0"}, "codex exec-server", "invalid websocket --listen URL"},
		{[]string{"exec-server", "--log-level", "loud"}, "codex exec-server", `invalid --log-level "loud"`},
		{[]string{"exec-server", "stray"}, "codex exec-server", `unexpected argument "stray"`},
		{[]string{"exec-server", "generate-json-schema"}, "codex exec-server generate-json-schema", "missing --out DIR"},
		{[]string{"exec-server", "generate-json-schema", "--outdir", "x"}, "codex exec-server generate-json-schema", "unknown flag --outdir"},
		{[]string{"exec"}, "codex exec", "missing command"},
		{[]string{"exec", "frob"}, "codex exec", `unknown command "frob"`},
		{[]string{"exec", "run"}, "codex exec run", "missing command"},
		{[]string{"exec", "run", "--timeout", "x", "--", "true"}, "codex exec run", `invalid value "x" for --timeout`},
		{[]string{"exec", "run", "--tty=maybe", "--", "true"}, "codex exec run", `invalid value "maybe" for --tty`},
		{[]string{"exec", "run", "--env", "NOEQUALS", "--", "true"}, "codex exec run", `--env "NOEQUALS"`},
		{[]string{"sandbox"}, "codex sandbox", "missing command"},
		{[]string{"sandbox", "--mode", "lax", "--", "true"}, "codex sandbox", "lax"},
		{[]string{"sandbox", "--bogus"}, "codex sandbox", "unknown flag --bogus"},
		{[]string{"exec-mcp-server", "--frob"}, "codex exec-mcp-server", "unknown flag --frob"},
		{[]string{"exec-mcp-server", "--intercept", "magic"}, "codex exec-mcp-server", `unknown --intercept mode "magic"`},
		{[]string{"exec-mcp-server", "--max-pids-per-process", "-1"}, "codex exec-mcp-server", "--max-pids-per-process must not be negative"},
		{[]string{"exec-mcp-server", "--max-memory-per-process", "12x"}, "codex exec-mcp-server", "invalid --max-memory-per-process"},
		{[]string{"execpolicy"}, "codex execpolicy", "missing command"},
		{[]string{"execpolicy", "frob"}, "codex execpolicy", `unknown command "frob"`},
		{[]string{"completion"}, "codex completion", "expected one shell"},
		{[]string{"completion", "tcsh"}, "codex completion", `unsupported shell "tcsh"`},
	} {
		stdout, stderr, code := runCLI(t, nil, tc.args...)
		name := strings.Join(append([]string{"codex"}, tc.args...), " ")
		if code != 2 || stdout != "" {
			t.Errorf("%s: exit %d, stdout %q; want 2 and nothing", name, code, stdout)
		}
		hint := "Run '" + tc.help + " --help' for usage.\n"
		if strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) || !strings.HasSuffix(stderr, hint) {
			t.Errorf("%s: stderr %q; want one line with %q ending %q", name, stderr, tc.want, hint)
		}
	}
}

// TestCLIExecpolicyCheckUsage: `execpolicy check` keeps the reference's
// own usage errors (its several-line text) but also exits 2 with nothing
// on stdout.
func TestCLIExecpolicyCheckUsage(t *testing.T) {
	t.Parallel()
	stdout, stderr, code := runCLI(t, nil, "execpolicy", "check", "--frob")
	if code != 2 || stdout != "" || stderr == "" {
		t.Errorf("execpolicy check --frob: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestCLIHelpOnStdout: help asked for goes to stdout, exit 0, nothing on
// stderr; and it is the help of the command asked about.
func TestCLIHelpOnStdout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--help"}, "exec-server"},
		{[]string{"-h"}, "completion"},
		{[]string{"help"}, "exec-mcp-server"},
		{[]string{"help", "exec", "run"}, "--recovery-timeout"},
		{[]string{"exec", "run", "--help"}, "--recovery-timeout"},
		{[]string{"exec-server", "--help"}, "[$CODEX_EXEC_SERVER_SESSION_TTL]"},
		{[]string{"help", "exec-server"}, "--exit-on-stdin-close"},
		{[]string{"exec-server", "generate-json-schema", "-h"}, "--out DIR"},
		{[]string{"sandbox", "--help"}, "--writable-root"},
		{[]string{"exec-mcp-server", "--help"}, "--intercept"},
		{[]string{"execpolicy", "--help"}, "check"},
		{[]string{"execpolicy", "check", "--help"}, "--rules"},
		{[]string{"completion", "--help"}, "fish"},
	} {
		stdout, stderr, code := runCLI(t, nil, tc.args...)
		if code != 0 || stderr != "" || !strings.Contains(stdout, tc.want) {
			t.Errorf("codex %s: exit %d, stderr %q, stdout without %q:\n%s", strings.Join(tc.args, " "), code, stderr, tc.want, stdout)
		}
	}
}

// TestCLIVersion: --version and -V print one line on stdout and exit 0.
func TestCLIVersion(t *testing.T) {
	t.Parallel()
	for _, flag := range []string{"--version", "-V"} {
		stdout, stderr, code := runCLI(t, nil, flag)
		if code != 0 || stderr != "" || strings.Count(stdout, "\n") != 1 || !strings.HasPrefix(stdout, "codex ") {
			t.Errorf("codex %s: exit %d, stdout %q, stderr %q; want one line \"codex VERSION ...\"", flag, code, stdout, stderr)
		}
	}
}

// TestCLIVersionFromLdflags builds the binary with a version set at link
// time on the variable `make build` sets (cli.version) and checks that
// --version and -V print it on one line of stdout and exit 0.
func TestCLIVersionFromLdflags(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "codex")
	// -race as the package's binary (testbin.Main): the packages compiled
	// for it are reused from the build cache, and only those the tag
	// changes are compiled again; without it every package is compiled a
	// second time, which took half a minute on a loaded machine.
	build := exec.Command("go", "build", "-race", "-tags", "urfave_cli_no_docs", "-ldflags", "-X github.com/codexec/codex/cli.version=v9.8.7-test", "-o", bin, "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, flag := range []string{"--version", "-V"} {
		cmd := exec.Command(bin, flag)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if want := "codex v9.8.7-test (exec-server protocol "; err != nil || !strings.HasPrefix(stdout.String(), want) || strings.Count(stdout.String(), "\n") != 1 || stderr.Len() != 0 {
			t.Errorf("codex %s: %v, stdout %q, stderr %q; want one line %q...", flag, err, stdout.String(), stderr.String(), want)
		}
	}
}

// TestCLICompletion: a script for each shell, and the bash one, loaded
// into bash, completes a command name and a flag by asking the binary.
func TestCLICompletion(t *testing.T) {
	t.Parallel()
	for _, shell := range []string{"bash", "zsh", "fish"} {
		stdout, stderr, code := runCLI(t, nil, "completion", shell)
		if code != 0 || stderr != "" || !strings.Contains(stdout, "exec-server") && shell == "fish" || len(stdout) < 100 {
			t.Errorf("completion %s: exit %d, stderr %q, script %q", shell, code, stderr, stdout)
		}
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash to load the script into")
	}
	dir := t.TempDir()
	if err := os.Symlink(binary, filepath.Join(dir, "codex")); err != nil {
		t.Fatal(err)
	}
	script := `source <(codex completion bash)
COMP_WORDS=(codex exec-s); COMP_CWORD=1; _codex_complete; echo "${COMPREPLY[*]}"
COMP_WORDS=(codex exec-server --session-t); COMP_CWORD=2; _codex_complete; echo "${COMPREPLY[*]}"
COMP_WORDS=(codex exec ""); COMP_CWORD=2; _codex_complete; echo "${COMPREPLY[*]}"`
	cmd := exec.Command(bash, "--norc", "-c", script)
	cmd.Env = []string{raceEnv, "PATH=" + dir + ":/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	if want := "exec-server\n--session-ttl\nrun\n"; err != nil || string(out) != want {
		t.Errorf("bash completion: %v, %q; want %q", err, out, want)
	}
}
