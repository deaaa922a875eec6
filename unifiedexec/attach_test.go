package unifiedexec_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/codexec/codex/unifiedexec"
)

// Attach speaks to a server its caller runs (here a `codex exec-server
// --listen stdio` child this test owns, over two pipes): the handshake,
// a process; then, when the server ends, the running process fails with
// ErrTransport and nothing is restarted. Close closes the server's input
// (it exits at its end of input) and returns without waiting for it.
func TestAttach(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := func() (*exec.Cmd, *unifiedexec.Client) {
		t.Helper()
		inR, inW, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		outR, outW, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(binary, "exec-server", "--listen", "stdio", "--log-level", "warn", "--shutdown-grace", "0")
		cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		inR.Close()
		outW.Close()
		c, err := unifiedexec.Attach(ctx, outR, inW, unifiedexec.AttachOptions{})
		if err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatal(err)
		}
		return cmd, c
	}

	cmd, c := start()
	out, _, st, err := mustStart(ctx, t, c, "echo", "attached").Communicate(ctx, nil)
	if err != nil || st.Code != 0 || string(out) != "attached\n" {
		t.Fatalf("echo: %q %+v %v", out, st, err)
	}
	_ = c.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the server at the end of its input: %v, want exit 0", err)
	}

	cmd, c = start()
	defer c.Close()
	p := mustStart(ctx, t, c, "sleep", "30")
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if _, err := p.Wait(ctx); !errors.Is(err, unifiedexec.ErrTransport) {
		t.Fatalf("Wait after the server died: %v, want ErrTransport", err)
	}
	if _, err := c.Start(ctx, unifiedexec.StartOptions{Argv: []string{"true"}}); !errors.Is(err, unifiedexec.ErrTransport) {
		t.Fatalf("Start after the server died: %v, want ErrTransport (no restart)", err)
	}
}

func mustStart(ctx context.Context, t *testing.T, c *unifiedexec.Client, argv ...string) *unifiedexec.Process {
	t.Helper()
	p, err := c.Start(ctx, unifiedexec.StartOptions{Argv: argv})
	if err != nil {
		t.Fatal(err)
	}
	return p
}
