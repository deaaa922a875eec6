// Package testbin builds the codex binary for the integration tests of
// other packages, and runs a test binary's tests around it with a
// goroutine-leak check.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"go.uber.org/goleak"
)

// Main builds the codex binary from the module root (dir, relative to the
// calling package), stores its path in *binary, runs the tests and exits:
// with 1 if the build fails, the tests fail, or goroutines are left over.
// Extra go build flags (such as -race) come in flags.
func Main(m *testing.M, binary *string, root string, flags ...string) {
	run(m, binary, root, false, flags...)
}

// MainOnPath is Main with the binary's directory put first in $PATH before
// the tests run, so that code written as a user would (Supervise with zero
// options, which finds codex in $PATH) runs the fresh build.
func MainOnPath(m *testing.M, binary *string, root string, flags ...string) {
	run(m, binary, root, true, flags...)
}

func run(m *testing.M, binary *string, root string, onPath bool, flags ...string) {
	dir, err := os.MkdirTemp("", "codex-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*binary = filepath.Join(dir, "codex")
	args := append(append([]string{"build"}, flags...), "-o", *binary, root)
	build := exec.Command("go", args...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building codex:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	if slices.Contains(flags, "-race") {
		// A race-detector build sleeps one second at the exit of every
		// process with more than one thread (servers, helpers, CLI runs);
		// children that inherit our environment skip it.
		_ = os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	if onPath {
		_ = os.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
