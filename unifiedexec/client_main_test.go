package unifiedexec_test

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codexec/codex/internal/testbin"
	"github.com/codexec/codex/unifiedexec"
)

// binary is the codex binary built once for the package's tests.
var binary string

// TestMain puts that build first in $PATH, so the examples can Supervise
// with zero options as a user would.
func TestMain(m *testing.M) { testbin.MainOnPath(m, &binary, "..") }

// startWSServer starts `codex exec-server --listen ws://127.0.0.1:0` and
// returns its URL and a function that stops it.
func startWSServer(extra ...string) (url string, stop func(), err error) {
	cmd := exec.Command(binary, append([]string{"exec-server", "--listen", "ws://127.0.0.1:0"}, extra...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return "", nil, fmt.Errorf("reading the server URL: %w", err)
	}
	stop = func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	return strings.TrimSpace(line), stop, nil
}

// supervised starts a Client supervising a stdio server child of the test
// binary's codex build; both end with the test. ctx expires after 30 s.
func supervised(t *testing.T) (context.Context, *unifiedexec.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	c, err := unifiedexec.Supervise(ctx, unifiedexec.SuperviseOptions{Path: binary})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return ctx, c
}
