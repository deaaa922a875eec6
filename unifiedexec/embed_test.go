package unifiedexec_test

import (
	"errors"
	"io"
	"io/fs"
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

// Start failures match fs.ErrNotExist, ErrNotFound and fs.ErrPermission by
// code and data, and stay *rpc.Error for older callers.
func TestStartErrorsMatch(t *testing.T) {
	ctx, c := supervised(t)
	// OnOutput starts a goroutine; a failed start ends it (TestMain's leak
	// check).
	_, err := c.Start(ctx, unifiedexec.StartOptions{Argv: []string{"ue-no-such-program"}, OnOutput: func(unifiedexec.Chunk) {}})
	var we *unifiedexec.WireError
	var re *rpc.Error
	if !errors.Is(err, unifiedexec.ErrNotFound) || !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &we) || !errors.As(err, &re) {
		t.Fatalf("missing program: %v", err)
	}
	if we.Code != rpc.CodeInternalError || we.Method != "process/start" || we.Op != "exec" || re.Code != rpc.CodeInternalError {
		t.Fatalf("missing program: %+v", we)
	}

	_, err = c.Start(ctx, unifiedexec.StartOptions{Argv: []string{"true"}, Cwd: filepath.Join(t.TempDir(), "gone")})
	if !errors.Is(err, fs.ErrNotExist) || errors.Is(err, unifiedexec.ErrNotFound) || !errors.As(err, &we) || we.Op != "chdir" {
		t.Fatalf("missing cwd: %v", err)
	}

	script := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = c.Start(ctx, unifiedexec.StartOptions{Argv: []string{script}})
	if !errors.Is(err, fs.ErrPermission) || errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("not executable: %v", err)
	}

	_, err = c.ReadFile(ctx, filepath.Join(t.TempDir(), "absent"), nil)
	if !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, wire.ErrNotFound) || errors.Is(err, unifiedexec.ErrNotFound) {
		t.Fatalf("fs/readFile of a missing file: %v", err)
	}
}

// Signal takes a signal name: interrupt runs the trap, an unknown name is
// the server's -32602, an empty one is refused locally.
func TestProcessSignal(t *testing.T) {
	ctx, c := supervised(t)
	ready := make(chan struct{})
	var once sync.Once
	p, err := c.Start(ctx, unifiedexec.StartOptions{
		Argv:     []string{"/bin/sh", "-c", "trap 'echo trapped; exit 3' INT; echo ready; while :; do sleep 0.05; done"},
		OnOutput: func(unifiedexec.Chunk) { once.Do(func() { close(ready) }) },
	})
	if err != nil {
		t.Fatal(err)
	}
	<-ready
	err = p.Signal(ctx, "kill")
	var we *unifiedexec.WireError
	if !errors.Is(err, rpc.ErrInvalidParams) || !errors.As(err, &we) || we.Code != rpc.CodeInvalidParams {
		t.Fatalf("unknown signal: %v", err)
	}
	if err := p.Signal(ctx, ""); err == nil {
		t.Fatal("an empty signal was accepted")
	}
	if err := p.Signal(ctx, unifiedexec.SignalInterrupt); err != nil {
		t.Fatal(err)
	}
	st, err := p.Wait(ctx)
	if err != nil || st.Code != 3 || !strings.Contains(string(p.Current().Stdout), "trapped") {
		t.Fatalf("after interrupt: %+v %v %q", st, err, p.Current().Stdout)
	}
}

// Communicate reports a capture that dropped output as an error with the
// counts, along with the kept prefix and the status.
func TestCommunicateReportsTruncation(t *testing.T) {
	ctx, c := supervised(t)
	p, err := c.Start(ctx, unifiedexec.StartOptions{Argv: []string{"head", "-c", "100", "/dev/zero"}, OutputBytesCap: 10})
	if err != nil {
		t.Fatal(err)
	}
	out, _, st, err := p.Communicate(ctx, nil)
	var te *unifiedexec.TruncatedError
	if !errors.Is(err, unifiedexec.ErrOutputTruncated) || !errors.As(err, &te) || te.StdoutDropped != 90 || te.StderrDropped != 0 {
		t.Fatalf("err = %v", err)
	}
	if len(out) != 10 || st.Code != 0 {
		t.Fatalf("out %d bytes, status %+v", len(out), st)
	}
	p, err = c.Start(ctx, unifiedexec.StartOptions{Argv: []string{"head", "-c", "10", "/dev/zero"}, OutputBytesCap: 10})
	if err != nil {
		t.Fatal(err)
	}
	if out, _, _, err := p.Communicate(ctx, nil); err != nil || len(out) != 10 {
		t.Fatalf("output at the cap: %d bytes, %v", len(out), err)
	}
}

// A blocked OnOutput delays neither another process nor Close.
func TestBlockedCallbackStallsNothing(t *testing.T) {
	ctx, c := supervised(t)
	entered, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	var once sync.Once
	_, err := c.Start(ctx, unifiedexec.StartOptions{
		Argv: []string{"/bin/sh", "-c", "echo a; sleep 0.2; echo b"},
		OnOutput: func(unifiedexec.Chunk) {
			once.Do(func() { close(entered) })
			<-release
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	<-entered
	q, err := c.Start(ctx, unifiedexec.StartOptions{Argv: []string{"echo", "other"}})
	if err != nil {
		t.Fatal(err)
	}
	if out, _, _, err := q.Communicate(ctx, nil); err != nil || string(out) != "other\n" {
		t.Fatalf("other process: %q %v", out, err)
	}
	closed := make(chan struct{})
	go func() { c.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close waited for a blocked OnOutput")
	}
}

// Stdout and Stderr take io.Writers (io.Pipe gives a reader) and StdinPipe
// is an io.WriteCloser.
func TestPipes(t *testing.T) {
	ctx, c := supervised(t)
	r, w := io.Pipe()
	var stderr strings.Builder
	p, err := c.Start(ctx, unifiedexec.StartOptions{
		Argv:      []string{"/bin/sh", "-c", "cat; echo err >&2"},
		PipeStdin: true, Stdout: w, Stderr: &stderr,
	})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() { b, _ := io.ReadAll(r); got <- string(b) }()
	in := p.StdinPipe()
	if _, err := io.WriteString(in, "through the pipe\n"); err != nil {
		t.Fatal(err)
	}
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	if st, err := p.Wait(ctx); err != nil || st.Code != 0 {
		t.Fatalf("wait: %+v %v", st, err)
	}
	w.Close()
	if s := <-got; s != "through the pipe\n" || stderr.String() != "err\n" {
		t.Fatalf("stdout %q stderr %q", s, stderr.String())
	}
}

// A failing Stdout writer gets no more data and Wait reports its error.
func TestStdoutWriterError(t *testing.T) {
	ctx, c := supervised(t)
	r, w := io.Pipe()
	r.Close()
	p, err := c.Start(ctx, unifiedexec.StartOptions{Argv: []string{"echo", "x"}, Stdout: w})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(ctx); !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("wait: %v", err)
	}
}
