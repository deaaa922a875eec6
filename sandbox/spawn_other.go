//go:build !linux

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
)

// HelperName is the argv[0] under which our binary acts as the sandbox
// helper.
const HelperName = "codex-linux-sandbox"

// Available always fails off Linux: there is no enforcement.
func Available() error {
	return fmt.Errorf("%w: %w", ErrUnenforceable, errors.ErrUnsupported)
}

// ChildMain reports that the helper exists only on Linux and returns 1.
func ChildMain(ChildOptions) int {
	fmt.Fprintln(os.Stderr, HelperName+": sandboxing is only supported on Linux")
	return 1
}

// Launcher starts nothing off Linux: there is no helper (Prepare fails
// first, with Available's error).
type Launcher struct{}

// NewLauncher returns a Launcher whose Apply fails.
func NewLauncher(*Plan, func(error)) *Launcher { return &Launcher{} }

// OpenPTY leaves the terminal to the spawner.
func (*Launcher) OpenPTY() (master, slave *os.File, err error) { return nil, nil, nil }

// Apply fails: nothing can be enforced here.
func (*Launcher) Apply(string, []string, *syscall.ProcAttr, int) (string, []string, error) {
	return "", nil, Available()
}

// ProxyListeners has nothing to give: no command is started here.
func (*Launcher) ProxyListeners(context.Context) ([]ProxyListener, error) { return nil, ErrNotProxied }

// Close does nothing.
func (*Launcher) Close() error { return nil }

// SignalScopeAvailable always fails off Linux.
func SignalScopeAvailable() error { return Available() }
