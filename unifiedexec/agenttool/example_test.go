package agenttool_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/codexec/codex/unifiedexec"
	"github.com/codexec/codex/unifiedexec/agenttool"
)

// Run exec_command the way a model calls it, on a supervised server, and
// read the tool output the model would see.
func ExampleNew() {
	ctx := context.Background()
	c, err := unifiedexec.Supervise(ctx, unifiedexec.SuperviseOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	tools := agenttool.New(agenttool.Config{Backend: agenttool.ClientBackend{Client: c}})
	defer tools.Close()
	out, err := tools.ExecCommand(ctx, agenttool.ExecCommandCall{CallID: "call-1", Cwd: os.TempDir(),
		Params: agenttool.ExecCommandParams{Cmd: "echo hi; exit 2"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, line := range strings.Split(out.Text(), "\n") {
		if strings.HasPrefix(line, "Process exited") || line == "hi" {
			fmt.Println(line)
		}
	}
	// Output:
	// Process exited with code 2
	// hi
}
