package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// execRun runs `codex exec run` with args and extra environment and returns
// stdout, stderr and the exit code.
func execRun(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"exec", "run"}, args...)...)
	cmd.Env = append([]string{raceEnv, "PATH=/usr/bin:/bin"}, env...)
	var stdout, stderr lockedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), code
}

// docs/operations.md §2: the bearer token of `codex exec run` can come from a
// file or the environment, so that it never shows in ps; --token still
// works but warns.
func TestExecRunTokenSources(t *testing.T) {
	t.Parallel()
	const token = "s3cret-token-value"
	dir := t.TempDir()
	serverFile := filepath.Join(dir, "server-token")
	clientFile := filepath.Join(dir, "client-token")
	for _, f := range []string{serverFile, clientFile} {
		if err := os.WriteFile(f, []byte(token+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s := startServer(t, "--ws-auth", "capability-token", "--ws-token-file", serverFile)
	cmdArgs := []string{"--", "/bin/echo", "hi"}

	out, errOut, code := execRun(t, nil, append([]string{"--server", s.URL, "--token-file", clientFile}, cmdArgs...)...)
	if code != 0 || out != "hi\n" || strings.Contains(errOut, "warning") {
		t.Fatalf("--token-file: code %d out %q stderr %q", code, out, errOut)
	}
	out, errOut, code = execRun(t, []string{"CODEX_EXEC_SERVER_TOKEN=" + token}, append([]string{"--server", s.URL}, cmdArgs...)...)
	if code != 0 || out != "hi\n" || strings.Contains(errOut, "warning") {
		t.Fatalf("environment: code %d out %q stderr %q", code, out, errOut)
	}
	out, errOut, code = execRun(t, nil, append([]string{"--server", s.URL, "--token", token}, cmdArgs...)...)
	if code != 0 || out != "hi\n" || !strings.Contains(errOut, "warning: --token") {
		t.Fatalf("--token: code %d out %q stderr %q", code, out, errOut)
	}
	if _, _, code = execRun(t, nil, append([]string{"--server", s.URL}, cmdArgs...)...); code == 0 {
		t.Fatal("no token: the server accepted the client")
	}
	_, errOut, code = execRun(t, []string{"CODEX_EXEC_SERVER_TOKEN=" + token}, append([]string{"--server", s.URL, "--token-file", filepath.Join(dir, "missing")}, cmdArgs...)...)
	if code == 0 || !strings.Contains(errOut, "token") {
		t.Fatalf("missing token file: code %d stderr %q", code, errOut)
	}
	// The variable is not passed on to a supervised server's commands.
	out, errOut, code = execRun(t, []string{"CODEX_EXEC_SERVER_TOKEN=" + token}, "--", "/bin/sh", "-c", "echo ${CODEX_EXEC_SERVER_TOKEN-unset}")
	if code != 0 || out != "unset\n" {
		t.Fatalf("supervised command environment: code %d out %q stderr %q", code, out, errOut)
	}
}
