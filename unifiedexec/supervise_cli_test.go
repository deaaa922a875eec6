package unifiedexec_test

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"errors"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// execRun runs `codex exec run args...` with stdin and returns its stdout,
// stderr and exit code.
func execRun(t *testing.T, stdin []byte, args ...string) (stdout, stderr []byte, code int) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"exec", "run"}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("exec run: %v", err)
	}
	return o.Bytes(), e.Bytes(), code
}

func TestExecRunExitCodes(t *testing.T) {
	t.Parallel()
	for _, want := range []int{0, 1, 4, 5, 44} {
		t.Run(strconv.Itoa(want), func(t *testing.T) {
			t.Parallel()
			out, errOut, code := execRun(t, nil, "--", "sh", "-c", "echo out; echo err >&2; exec >&- 2>&-; exit "+strconv.Itoa(want))
			if code != want || string(out) != "out\n" || string(errOut) != "err\n" {
				t.Fatalf("code %d stdout %q stderr %q; want %d out/err", code, out, errOut, want)
			}
		})
	}
	t.Run("sigkill", func(t *testing.T) {
		t.Parallel()
		if _, _, code := execRun(t, nil, "--", "sh", "-c", "kill -9 $$"); code != 137 {
			t.Fatalf("code %d, want 137", code)
		}
	})
}

func TestExecRunStdinRoundTrip(t *testing.T) {
	t.Parallel()
	for i := range 3 {
		data := make([]byte, 200<<10+i*7919)
		_, _ = rand.Read(data)
		out, errOut, code := execRun(t, data, "--", "cat")
		if code != 0 || !bytes.Equal(out, data) {
			t.Fatalf("code %d, %d bytes back (want %d), identical %v, stderr %q", code, len(out), len(data), bytes.Equal(out, data), errOut)
		}
	}
}

func TestExecRunTimeout(t *testing.T) {
	t.Parallel()
	start := time.Now()
	if _, _, code := execRun(t, nil, "--timeout", "300ms", "--", "sleep", "20"); code != 124 {
		t.Fatalf("code %d, want 124", code)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("took %v", d)
	}
}

func TestExecRunCtrlC(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(binary, "exec", "run", "--", "sh", "-c", "echo ready; exec sleep 30")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("first line %q, %v", line, err)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exec run ended with %v, want exit code 130", err)
	}
}

func TestExecRunFlagErrors(t *testing.T) {
	t.Parallel()
	_, errOut, code := execRun(t, nil, "--sandbox", "read-only", "--permission-profile", `{"type":"disabled"}`, "--", "true")
	if code == 0 || !bytes.Contains(errOut, []byte("cannot be combined")) {
		t.Fatalf("code %d stderr %q", code, errOut)
	}
	out, _, code := execRun(t, nil, "--env", "UE_X=42", "--output-bytes-cap", "3", "--", "sh", "-c", `printf %s "$UE_X-abcdef"`)
	if code != 0 || string(out) != "42-" {
		t.Fatalf("code %d stdout %q", code, out)
	}
}
