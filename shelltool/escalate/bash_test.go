package escalate

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// patchedBash is the npm package's Bash with the BASH_EXEC_WRAPPER patch
// patchedBash is the npm package's patched Bash for this OS (docs/shell-tool.md §2.1):
// $CODEX_TEST_PATCHED_BASH, which `make test` sets from
// scripts/patched-bash.sh (installing it with npm), else the Debian 12
// build in the script's default cache folder.
var patchedBash = func() string {
	if p := os.Getenv("CODEX_TEST_PATCHED_BASH"); p != "" {
		return p
	}
	return "/tmp/codex-shell-tool-mcp-0.97.0/node_modules/@openai/codex-shell-tool-mcp/vendor/x86_64-unknown-linux-musl/bash/debian-12/bash"
}()

// byProgram decides by the base name of the program.
type byProgram map[string]Decision

func (m byProgram) Decide(ctx context.Context, r Request) Decision {
	d, ok := m[filepath.Base(r.File)]
	if !ok {
		return Decision{Action: Run}
	}
	if d.Action == Escalate {
		p, err := OpenProgram(r.File)
		if err != nil {
			reason := err.Error()
			return Decision{Action: Deny, Reason: &reason}
		}
		d.Program = p
	}
	return d
}

// TestPatchedBash runs a script under the patched Bash with our wrapper
// and server: each external command is judged, run in place, escalated
// or denied, and the script goes on. It avoids two external commands in
// a row, which the npm build's argv bug breaks (docs/shell-tool.md §2.1).
func TestPatchedBash(t *testing.T) {
	if _, err := os.Stat(patchedBash); err != nil {
		t.Skipf("patched Bash absent: %v (run scripts/patched-bash.sh, or make test, which sets CODEX_TEST_PATCHED_BASH)", err)
	}
	reason := "Execution forbidden by policy"
	d := byProgram{
		"sh":    {Action: Escalate},
		"touch": {Action: Deny, Reason: &reason},
	}
	child, stop := startServe(t, d)
	defer stop()
	dir := t.TempDir()
	script := `ls -d /tmp; echo a; sh -c 'echo "escalated $PPID"; exit 3'; echo rc=$?; ` +
		`touch x; echo rc=$?; echo end`
	cmd := exec.Command(patchedBash, "--norc", "-c", script)
	cmd.Dir = dir
	wrapper := ourWrapper(t)
	cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, WrapperEnv(wrapper, 3)...)
	cmd.ExtraFiles = []*os.File{child}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("bash: %v\n%s", err, out.String())
	}
	want := strings.Join([]string{"/tmp", "a", "escalated " + strconv.Itoa(os.Getpid()), "rc=3",
		"Execution denied: " + reason, "rc=1", "end", ""}, "\n")
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out.String(), want)
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); err == nil {
		t.Error("the denied touch ran")
	}
}

// TestPatchedBashArgvBug: two external commands in a row reach the
// wrapper with an empty argv[0] (or program) under the npm build; the
// wrapper and the server must survive it and the script must go on.
func TestPatchedBashArgvBug(t *testing.T) {
	if _, err := os.Stat(patchedBash); err != nil {
		t.Skipf("patched Bash absent: %v", err)
	}
	d := &fakeDecider{dec: Decision{Action: Run}}
	child, stop := startServe(t, d)
	// The exact pattern of docs/shell-tool.md §2.1: the second ls comes with argv[0] "".
	cmd := exec.Command(patchedBash, "--norc", "-c", "ls x; ls y; echo end")
	cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, WrapperEnv(ourWrapper(t), 3)...)
	cmd.ExtraFiles = []*os.File{child}
	out, err := cmd.CombinedOutput()
	stop()
	if err != nil || !strings.HasSuffix(string(out), "\nend\n") {
		t.Errorf("bash: %v, output %q", err, out)
	}
	reqs := d.requests()
	if len(reqs) != 2 || reqs[1].File != "/usr/bin/ls" {
		t.Fatalf("requests %+v", reqs)
	}
	t.Logf("second argv %q (the npm build's bug empties argv[0]); output %q", reqs[1].Argv, out)
}
