//go:build !linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
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
