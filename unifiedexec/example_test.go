package unifiedexec_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/codexec/codex/unifiedexec"
)

// Supervise a private stdio exec-server (the codex found in $PATH) and run
// one command to completion.
func ExampleSupervise() {
	ctx := context.Background()
	c, err := unifiedexec.Supervise(ctx, unifiedexec.SuperviseOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	p, err := c.Start(ctx, unifiedexec.StartOptions{Argv: []string{"sh", "-c", "echo hello; exit 4"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	st, err := p.Wait(ctx)
	fmt.Printf("%q %d %v\n", p.Current().Stdout, st.Code, err)
	// Output: "hello\n" 4 <nil>
}

// Dial a WebSocket exec-server. This one is started for the example, as
// `codex exec-server --listen ws://127.0.0.1:0` (codex from $PATH), which
// prints the URL it listens on as the first line of its stdout.
func ExampleDial() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	server := exec.Command("codex", "exec-server", "--listen", "ws://127.0.0.1:0")
	announce, err := server.StdoutPipe()
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := server.Start(); err != nil {
		fmt.Println(err)
		return
	}
	defer func() {
		server.Process.Signal(syscall.SIGTERM)
		server.Wait()
	}()
	url, err := bufio.NewReader(announce).ReadString('\n')
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := unifiedexec.Dial(ctx, strings.TrimSpace(url), unifiedexec.DialOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	status, err := c.EnvironmentStatus(ctx)
	fmt.Println(status, err, c.SessionID() != "")
	// Output: ready <nil> true
}

// Communicate writes stdin, closes it and collects the output.
func ExampleProcess_Communicate() {
	ctx := context.Background()
	c, err := unifiedexec.Supervise(ctx, unifiedexec.SuperviseOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	p, err := c.Start(ctx, unifiedexec.StartOptions{Argv: []string{"tr", "a-z", "A-Z"}, PipeStdin: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _, st, err := p.Communicate(ctx, []byte("shout\n"))
	fmt.Printf("%s%d %v\n", out, st.Code, err)
	// Output:
	// SHOUT
	// 0 <nil>
}

// Stream output as it arrives with OnOutput; Wait returns after the last
// chunk has been handed to it.
func ExampleClient_Start() {
	ctx := context.Background()
	c, err := unifiedexec.Supervise(ctx, unifiedexec.SuperviseOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	p, err := c.Start(ctx, unifiedexec.StartOptions{
		Argv:     []string{"sh", "-c", "echo one; echo two >&2"},
		OnOutput: func(ch unifiedexec.Chunk) { fmt.Fprintf(os.Stdout, "%s: %s", ch.Stream, ch.Data) },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := p.Wait(ctx); err != nil {
		fmt.Println(err)
	}
	// Unordered output:
	// stdout: one
	// stderr: two
}
