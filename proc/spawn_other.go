//go:build !linux

package proc

import (
	"errors"
	"fmt"
	"syscall"
)

// Start is implemented only on Linux; elsewhere it returns an error
// matching errors.ErrUnsupported.
func Start(spec Spec, out OutputFunc, opts Options) (*Process, error) {
	return nil, fmt.Errorf("proc: start: %w", errors.ErrUnsupported)
}

// Signal is implemented only on Linux.
func (p *Process) Signal(sig syscall.Signal) error { return errors.ErrUnsupported }

// Kill is implemented only on Linux.
func (p *Process) Kill() error { return errors.ErrUnsupported }

// Resize is implemented only on Linux.
func (p *Process) Resize(rows, cols uint16) error { return errors.ErrUnsupported }

// ClaimIgnoredSignals does nothing outside Linux.
func ClaimIgnoredSignals() (restore func()) { return func() {} }
func recycleChunk([]byte)                   {}

// OutputEnding is implemented only on Linux.
func (p *Process) OutputEnding() bool { return false }
