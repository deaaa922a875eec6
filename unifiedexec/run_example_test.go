package unifiedexec_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/codexec/codex/unifiedexec"
)

// Run one command like `ssh host cmd`: output streamed, stdin forwarded,
// Ctrl-C passed on, and the exit code of the command (or of the failure).
func ExampleRun() {
	ctx := context.Background()
	c, err := unifiedexec.Supervise(ctx, unifiedexec.SuperviseOptions{Path: "codex"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return // a command-line tool exits with unifiedexec.ExitFailure
	}
	defer c.Close()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	code, err := unifiedexec.Run(ctx, c, unifiedexec.RunOptions{
		Argv: []string{"sh", "-c", "echo hello; cat; exit 3"},
		// A command-line tool passes os.Stdin.
		Stdin:  strings.NewReader("from stdin\n"),
		Stdout: os.Stdout, Stderr: os.Stderr, Signals: sigs,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	fmt.Println("exit code", code)
	// Output:
	// hello
	// from stdin
	// exit code 3
}
