package unifiedexec_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/codexec/codex/unifiedexec"
	"github.com/codexec/codex/wire"
)

// Run one command with command/exec: buffered output, an environment
// override, a timeout, and a permission profile.
func ExampleClient_CommandExec() {
	ctx := context.Background()
	c, err := unifiedexec.Supervise(ctx, unifiedexec.SuperviseOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	res, err := c.CommandExec(ctx, unifiedexec.CommandExecRequest{
		Argv:              []string{"sh", "-c", `echo "hello $WHO"; exit 3`},
		Env:               map[string]string{"WHO": "world"},
		Timeout:           5 * time.Second,
		PermissionProfile: ":read-only",
	})
	fmt.Printf("%d %q %v\n", res.ExitCode, res.Stdout, err)

	// Errors answered by the server carry its code and message.
	_, err = c.CommandExec(ctx, unifiedexec.CommandExecRequest{})
	var we *unifiedexec.WireError
	if errors.As(err, &we) {
		fmt.Println(we.Code, we.Message)
	}
	// Output:
	// 3 "hello world\n" <nil>
	// -32600 command must not be empty
}

// Stream a command on a PTY: type into it, resize it, read its output as
// it comes.
func ExampleClient_StartCommandExec() {
	ctx := context.Background()
	c, err := unifiedexec.Supervise(ctx, unifiedexec.SuperviseOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	var out strings.Builder // OnOutput runs on one goroutine, before Wait returns
	h, err := c.StartCommandExec(ctx, unifiedexec.CommandExecRequest{
		Argv:     []string{"sh", "-c", `read name; stty size; echo "bye $name"`},
		TTY:      true,
		OnOutput: func(o unifiedexec.CommandExecOutput) { out.Write(o.Data) },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := h.Resize(ctx, wire.Size{Rows: 40, Cols: 120}); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	if err := h.Write(ctx, []byte("gopher\n")); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	res, err := h.Wait(ctx)
	fmt.Println(res.ExitCode, err)
	// The PTY echoes the input and ends lines with \r\n.
	fmt.Printf("%q\n", out.String())
	// Output:
	// 0 <nil>
	// "gopher\r\n40 120\r\nbye gopher\r\n"
}
