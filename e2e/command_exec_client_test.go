package e2e

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/unifiedexec"
	"github.com/codexec/codex/wire"
)

// The Go client's command/exec (unifiedexec.Client.CommandExec and
// StartCommandExec) against the real binary, over WebSocket and stdio.

// forEachClient runs f with a unifiedexec.Client over WebSocket (Dial) and
// over stdio (Supervise), each against a fresh server whose environment
// has CODEX_E2E_MARKER=1 and HOME.
func forEachClient(t *testing.T, f func(t *testing.T, ctx context.Context, c *unifiedexec.Client)) {
	for _, tr := range []struct {
		name string
		open func(t *testing.T, ctx context.Context) (*unifiedexec.Client, error)
	}{
		{"ws", func(t *testing.T, ctx context.Context) (*unifiedexec.Client, error) {
			return unifiedexec.Dial(ctx, startServer(t).URL, unifiedexec.DialOptions{})
		}},
		{"stdio", func(t *testing.T, ctx context.Context) (*unifiedexec.Client, error) {
			return unifiedexec.Supervise(ctx, unifiedexec.SuperviseOptions{
				Path: binary, MaxRestarts: -1,
				Env: []string{raceEnv, "PATH=/usr/bin:/bin", "HOME=" + os.Getenv("HOME"), "CODEX_E2E_MARKER=1"},
			})
		}},
	} {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			c, err := tr.open(t, ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			f(t, ctx, c)
		})
	}
}

// sh is a command/exec request running script with sh -c.
func sh(script string) unifiedexec.CommandExecRequest {
	return unifiedexec.CommandExecRequest{Argv: []string{"sh", "-c", script}}
}

func wantResult(t *testing.T, got unifiedexec.CommandExecResult, err error, want unifiedexec.CommandExecResult) {
	t.Helper()
	if err != nil {
		t.Fatalf("command/exec: %v", err)
	}
	if got != want {
		t.Fatalf("result %+v, want %+v", got, want)
	}
}

func TestCommandExecClientBuffered(t *testing.T) {
	t.Parallel()
	forEachClient(t, func(t *testing.T, ctx context.Context, c *unifiedexec.Client) {
		r := sh(`printf '%s|%s|%s' "$CODEX_E2E_MARKER" "$NEWVAR" "${HOME-unset}"; printf err >&2`)
		r.Env = map[string]string{"CODEX_E2E_MARKER": "over", "NEWVAR": "new"}
		r.Unset = []string{"HOME"}
		res, err := c.CommandExec(ctx, r)
		wantResult(t, res, err, unifiedexec.CommandExecResult{Stdout: "over|new|unset", Stderr: "err"})

		// The point is the output kept at the timeout: 1 s, and when the
		// shell had printed nothing by then, once more with 3 s, long
		// enough for the sandbox to start and the shell to print on a
		// loaded machine.
		for _, timeout := range []time.Duration{time.Second, 3 * time.Second} {
			r = sh(`printf partial; exec sleep 30`)
			r.Timeout = timeout
			start := time.Now()
			res, err = c.CommandExec(ctx, r)
			if err == nil && res.ExitCode == 124 && res.Stdout == "" && timeout < 3*time.Second {
				t.Logf("the %v timeout came before the shell printed: once more", timeout)
				continue
			}
			wantResult(t, res, err, unifiedexec.CommandExecResult{ExitCode: 124, Stdout: "partial"})
			if d := time.Since(start); d > timeout+7*time.Second {
				t.Errorf("a %v timeout took %s", timeout, d)
			}
			break
		}

		r = sh(`printf abcdef; printf uvwxyz >&2; exit 3`)
		r.OutputBytesCap = 5
		res, err = c.CommandExec(ctx, r)
		wantResult(t, res, err, unifiedexec.CommandExecResult{ExitCode: 3, Stdout: "abcde", Stderr: "uvwxy"})

		// More than the default 1 MiB cap, with no cap and no timeout.
		r = sh(`head -c 1500000 /dev/zero | tr '\0' a`)
		r.OutputBytesCap, r.Timeout = unifiedexec.NoOutputBytesCap, unifiedexec.NoTimeout
		res, err = c.CommandExec(ctx, r)
		if err != nil || res.ExitCode != 0 || len(res.Stdout) != 1500000 {
			t.Fatalf("uncapped: exit %d, %d bytes, %v", res.ExitCode, len(res.Stdout), err)
		}
	})
}

func TestCommandExecClientPermissionProfile(t *testing.T) {
	t.Parallel()
	forEachClient(t, func(t *testing.T, ctx context.Context, c *unifiedexec.Client) {
		dir := t.TempDir()
		r := sh(`echo x > probe && echo wrote`)
		r.Cwd, r.PermissionProfile = dir, ":read-only"
		res, err := c.CommandExec(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if res.ExitCode == 0 || !strings.Contains(res.Stderr, "Read-only file system") {
			t.Fatalf(":read-only write: %+v", res)
		}
		if _, err := os.Stat(filepath.Join(dir, "probe")); err == nil {
			t.Fatal(":read-only created the file")
		}
		// The same write under :workspace (the request cwd is its root).
		r.PermissionProfile = ":workspace"
		res, err = c.CommandExec(ctx, r)
		wantResult(t, res, err, unifiedexec.CommandExecResult{Stdout: "wrote\n"})
	})
}

// collector gathers streamed output per stream and signals each delta.
type collector struct {
	mu    sync.Mutex
	out   map[string]string
	caps  int
	delta chan struct{}
}

func newCollector() *collector {
	return &collector{out: map[string]string{}, delta: make(chan struct{}, 1)}
}

func (k *collector) add(o unifiedexec.CommandExecOutput) {
	k.mu.Lock()
	k.out[o.Stream] += string(o.Data)
	if o.CapReached {
		k.caps++
	}
	k.mu.Unlock()
	select {
	case k.delta <- struct{}{}:
	default:
	}
}

func (k *collector) get(stream string) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.out[stream]
}

// waitFor waits until stream contains want.
func (k *collector) waitFor(t *testing.T, stream, want string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for !strings.Contains(k.get(stream), want) {
		select {
		case <-k.delta:
		case <-deadline:
			t.Fatalf("%s never contained %q: %q", stream, want, k.get(stream))
		}
	}
}

func TestCommandExecClientStreaming(t *testing.T) {
	t.Parallel()
	forEachClient(t, func(t *testing.T, ctx context.Context, c *unifiedexec.Client) {
		k := newCollector()
		r := sh(`printf ready; read l; printf 'out:%s' "$l"; printf 'err:%s' "$l" >&2`)
		r.StreamStdin, r.StreamOutput, r.OnOutput = true, true, k.add
		h, err := c.StartCommandExec(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Write(ctx, []byte("hello\n")); err != nil {
			t.Fatal(err)
		}
		if err := h.CloseStdin(ctx); err != nil {
			t.Fatal(err)
		}
		res, err := h.Wait(ctx)
		wantResult(t, res, err, unifiedexec.CommandExecResult{})
		// Every delta was delivered before Wait returned.
		if o, e := k.get("stdout"), k.get("stderr"); o != "readyout:hello" || e != "err:hello" {
			t.Fatalf("streamed stdout %q stderr %q", o, e)
		}
		if err := h.Terminate(ctx); !errors.Is(err, unifiedexec.ErrCommandExecDone) {
			t.Fatalf("terminate after the end: %v", err)
		}

		// A streamed cap: the last delta says so.
		k = newCollector()
		r = sh(`printf abcdef`)
		r.StreamOutput, r.OutputBytesCap, r.OnOutput = true, 5, k.add
		res, err = c.CommandExec(ctx, r)
		wantResult(t, res, err, unifiedexec.CommandExecResult{})
		if k.get("stdout") != "abcde" || k.caps != 1 {
			t.Fatalf("capped stream %q, %d capReached", k.get("stdout"), k.caps)
		}
	})
}

func TestCommandExecClientTTY(t *testing.T) {
	t.Parallel()
	forEachClient(t, func(t *testing.T, ctx context.Context, c *unifiedexec.Client) {
		k := newCollector()
		r := sh(`stty size; read l; stty size`)
		r.TTY, r.Size, r.OnOutput = true, &wire.Size{Rows: 31, Cols: 101}, k.add
		r.ProcessID = "tty-1"
		h, err := c.StartCommandExec(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if h.ProcessID() != "tty-1" {
			t.Fatalf("process id %q", h.ProcessID())
		}
		k.waitFor(t, "stdout", "31 101")
		if err := h.Resize(ctx, wire.Size{Rows: 45, Cols: 132}); err != nil {
			t.Fatal(err)
		}
		if err := h.Write(ctx, []byte("\n")); err != nil {
			t.Fatal(err)
		}
		res, err := h.Wait(ctx)
		wantResult(t, res, err, unifiedexec.CommandExecResult{})
		if out := k.get("stdout"); !strings.Contains(out, "45 132") {
			t.Fatalf("after the resize: %q", out)
		}
	})
}

func TestCommandExecClientTerminate(t *testing.T) {
	t.Parallel()
	forEachClient(t, func(t *testing.T, ctx context.Context, c *unifiedexec.Client) {
		h, err := c.StartCommandExec(ctx, unifiedexec.CommandExecRequest{Argv: []string{"sleep", "30"}, Timeout: unifiedexec.NoTimeout})
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Terminate(ctx); err != nil {
			t.Fatal(err)
		}
		res, err := h.Wait(ctx)
		wantResult(t, res, err, unifiedexec.CommandExecResult{ExitCode: 137})

		// CommandExec's ctx ending terminates the command.
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err = c.CommandExec(short, unifiedexec.CommandExecRequest{Argv: []string{"sleep", "30"}, Timeout: unifiedexec.NoTimeout})
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
			t.Fatalf("cancelled exec: %v after %s", err, time.Since(start))
		}

		// An abandoned handle ends with the Client (goleak checks the rest).
		h, err = c.StartCommandExec(ctx, unifiedexec.CommandExecRequest{Argv: []string{"sleep", "30"}, Timeout: unifiedexec.NoTimeout, StreamOutput: true, OnOutput: func(unifiedexec.CommandExecOutput) {}})
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		if _, err := h.Wait(ctx); !errors.Is(err, unifiedexec.ErrClosed) {
			t.Fatalf("wait after Close: %v", err)
		}
		if _, err := c.StartCommandExec(ctx, sh("true")); !errors.Is(err, unifiedexec.ErrClosed) {
			t.Fatalf("start after Close: %v", err)
		}
	})
}

func TestCommandExecClientErrors(t *testing.T) {
	t.Parallel()
	forEachClient(t, func(t *testing.T, ctx context.Context, c *unifiedexec.Client) {
		_, err := c.CommandExec(ctx, unifiedexec.CommandExecRequest{})
		var we *unifiedexec.WireError
		if !errors.As(err, &we) || we.Code != rpc.CodeInvalidRequest || we.Message != "command must not be empty" || we.Method != wire.MethodCommandExec {
			t.Fatalf("empty argv: %#v", err)
		}
		if !errors.Is(err, rpc.ErrInvalidRequest) {
			t.Fatalf("empty argv does not match rpc.ErrInvalidRequest: %v", err)
		}
		r := sh("true")
		r.PermissionProfile, r.SandboxPolicy = ":read-only", map[string]any{"type": "readOnly"}
		_, err = c.CommandExec(ctx, r)
		if !errors.As(err, &we) || we.Code != rpc.CodeInvalidRequest || we.Message != "`permissionProfile` cannot be combined with `sandboxPolicy`" {
			t.Fatalf("profile and policy: %v", err)
		}
		_, err = c.CommandExec(ctx, unifiedexec.CommandExecRequest{Argv: []string{"/nonexistent/prog"}, PermissionProfile: ":danger-full-access"})
		if !errors.As(err, &we) || we.Code != rpc.CodeInternalError || we.Message != "failed to spawn command: No such file or directory (os error 2)" {
			t.Fatalf("missing program: %v", err)
		}
		// A processId still running on this client is refused before it is sent.
		h, err := c.StartCommandExec(ctx, unifiedexec.CommandExecRequest{Argv: []string{"sleep", "30"}, ProcessID: "dup"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.StartCommandExec(ctx, unifiedexec.CommandExecRequest{Argv: []string{"true"}, ProcessID: "dup"}); err == nil || errors.As(err, &we) {
			t.Fatalf("a second dup: %v", err)
		}
		if err := h.Terminate(ctx); err != nil {
			t.Fatal(err)
		}
		if res, err := h.Wait(ctx); err != nil || res.ExitCode != 137 {
			t.Fatalf("dup after terminate: %+v %v", res, err)
		}
		// Once it has answered, the id can be used again.
		res, err := c.CommandExec(ctx, unifiedexec.CommandExecRequest{Argv: []string{"true"}, ProcessID: "dup"})
		wantResult(t, res, err, unifiedexec.CommandExecResult{})
		r = sh("true")
		r.Env, r.Unset = map[string]string{"A": "1"}, []string{"A"}
		if _, err := c.CommandExec(ctx, r); err == nil || errors.As(err, &we) {
			t.Fatalf("set and unset: %v", err)
		}
	})
}

// A command/exec is not resumed after the connection is lost: Wait fails
// with ErrCommandExecLost at once.
func TestCommandExecClientConnectionLost(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := startServer(t)
	c, err := unifiedexec.Dial(ctx, s.URL, unifiedexec.DialOptions{RecoveryTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h, err := c.StartCommandExec(ctx, unifiedexec.CommandExecRequest{Argv: []string{"sleep", "10"}, StreamStdin: true})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	start := time.Now()
	_, err = h.Wait(ctx)
	if !errors.Is(err, unifiedexec.ErrCommandExecLost) || !errors.Is(err, unifiedexec.ErrTransport) {
		t.Fatalf("wait after the loss: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the loss was reported after %s", d)
	}
	if err := h.Write(ctx, []byte("x")); !errors.Is(err, unifiedexec.ErrCommandExecDone) {
		t.Fatalf("write after the loss: %v", err)
	}
}

// Every delta reaches OnOutput before Wait returns, and a write sent right
// after StartCommandExec finds the command: repeated, since both are races
// when done wrong.
func TestCommandExecClientOrder(t *testing.T) {
	t.Parallel()
	forEachClient(t, func(t *testing.T, ctx context.Context, c *unifiedexec.Client) {
		for i := 0; i < 15; i++ {
			k := newCollector()
			r := sh(`printf a; read l; printf "$l"; printf c >&2`)
			r.StreamStdin, r.StreamOutput, r.OnOutput = true, true, k.add
			h, err := c.StartCommandExec(ctx, r)
			if err != nil {
				t.Fatal(err)
			}
			if err := h.Write(ctx, []byte("b\n")); err != nil {
				t.Fatalf("run %d: write right after the start: %v", i, err)
			}
			res, err := h.Wait(ctx)
			wantResult(t, res, err, unifiedexec.CommandExecResult{})
			if o, e := k.get("stdout"), k.get("stderr"); o != "ab" || e != "c" {
				t.Fatalf("run %d: at Wait, stdout %q stderr %q", i, o, e)
			}
		}
	})
}
