package unifiedexec_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/codexec/codex/unifiedexec"
)

// Stream a process like os/exec: Stdout takes an io.Writer (io.Pipe gives
// an io.Reader) and StdinPipe is an io.WriteCloser. A slow writer delays
// only this process.
func ExampleProcess_StdinPipe() {
	ctx := context.Background()
	c, err := unifiedexec.Supervise(ctx, unifiedexec.SuperviseOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	p, err := c.Start(ctx, unifiedexec.StartOptions{Argv: []string{"tr", "a-z", "A-Z"}, PipeStdin: true, Stdout: os.Stdout})
	if err != nil {
		fmt.Println(err)
		return
	}
	stdin := p.StdinPipe()
	io.WriteString(stdin, "piped\n")
	stdin.Close()
	if _, err := p.Wait(ctx); err != nil {
		fmt.Println(err)
	}
	// Output: PIPED
}

// Errors match with errors.Is and errors.As, never by their text.
func ExampleWireError() {
	ctx := context.Background()
	c, err := unifiedexec.Supervise(ctx, unifiedexec.SuperviseOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	_, err = c.Start(ctx, unifiedexec.StartOptions{Argv: []string{"no-such-program"}})
	var we *unifiedexec.WireError
	fmt.Println(errors.Is(err, unifiedexec.ErrNotFound), errors.As(err, &we) && we.Code == -32603)
	_, err = c.ReadFile(ctx, "/no/such/file", nil)
	fmt.Println(errors.Is(err, os.ErrNotExist))
	// Output:
	// true true
	// true
}

// Communicate returns the kept prefix with an error when the capture cap
// dropped output.
func ExampleTruncatedError() {
	ctx := context.Background()
	c, err := unifiedexec.Supervise(ctx, unifiedexec.SuperviseOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	p, err := c.Start(ctx, unifiedexec.StartOptions{Argv: []string{"echo", "0123456789"}, OutputBytesCap: 4})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _, _, err := p.Communicate(ctx, nil)
	var te *unifiedexec.TruncatedError
	if errors.As(err, &te) {
		fmt.Printf("%s, %d bytes dropped\n", out, te.StdoutDropped)
	}
	// Output: 0123, 7 bytes dropped
}

// Interrupt a process: SIGINT to its process group, so its trap runs.
func ExampleProcess_Signal() {
	ctx := context.Background()
	c, err := unifiedexec.Supervise(ctx, unifiedexec.SuperviseOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	r, w := io.Pipe()
	p, err := c.Start(ctx, unifiedexec.StartOptions{
		Argv:   []string{"sh", "-c", "trap 'echo interrupted; exit 130' INT; echo ready; while :; do sleep 0.1; done"},
		Stdout: w,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	go func() { p.Wait(ctx); w.Close() }()
	buf := make([]byte, len("ready\n"))
	io.ReadFull(r, buf)
	if err := p.Signal(ctx, unifiedexec.SignalInterrupt); err != nil {
		fmt.Println(err)
	}
	rest, _ := io.ReadAll(r)
	st, _ := p.Wait(ctx)
	fmt.Printf("%s%d\n", rest, st.Code)
	// Output:
	// interrupted
	// 130
}

// Detach from a WebSocket exec-server without killing the processes, and
// reattach later (within the server's session TTL) to drive them by id.
// The zero DialOptions kills them at Close.
func ExampleDialOptions() {
	// A server on a free port; its first line on stdout is its URL.
	srv := exec.Command("codex", "exec-server", "--listen", "ws://127.0.0.1:0")
	stdout, err := srv.StdoutPipe()
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := srv.Start(); err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = srv.Process.Signal(syscall.SIGTERM); _ = srv.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		fmt.Println(err)
		return
	}
	url := strings.TrimSpace(line)

	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	c, err := unifiedexec.Dial(ctx, url, unifiedexec.DialOptions{KeepSession: true, Logger: logger})
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := c.Start(ctx, unifiedexec.StartOptions{Argv: []string{"echo", "built"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	id, session := p.ID(), c.SessionID()
	c.Close()

	c, err = unifiedexec.Dial(ctx, url, unifiedexec.DialOptions{ResumeSessionID: session, Logger: logger})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	res, err := c.Read(ctx, unifiedexec.ReadRequest{ProcessID: id, Wait: 5 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, ch := range res.Chunks {
		fmt.Print(strings.ToUpper(string(ch.Chunk)))
	}
	// Output:
	// BUILT
}
