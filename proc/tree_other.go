//go:build !linux

package proc

import (
	"errors"
	"fmt"
	"syscall"

	"go.uber.org/zap"
)

// TreeKiller kills whole process trees. It is implemented only on Linux.
type TreeKiller struct{}

// NewTreeKiller returns an error matching errors.ErrUnsupported outside
// Linux.
func NewTreeKiller(logger *zap.Logger) (*TreeKiller, error) {
	return nil, fmt.Errorf("proc: tree killer: %w", errors.ErrUnsupported)
}

// Mode returns "" outside Linux.
func (t *TreeKiller) Mode() string { return "" }

// Close does nothing outside Linux.
func (t *TreeKiller) Close() error { return nil }

func (t *TreeKiller) untrack(int)               {}
func (t *TreeKiller) release(string, bool) bool { return false }

// NewLimitedTreeKiller returns an error matching errors.ErrUnsupported
// outside Linux.
func NewLimitedTreeKiller(logger *zap.Logger, _ Limits, _ ...string) (*TreeKiller, error) {
	return NewTreeKiller(logger)
}

// PhysicalMemory is unknown outside Linux.
func PhysicalMemory() (int64, error) {
	return 0, fmt.Errorf("proc: physical memory: %w", errors.ErrUnsupported)
}

// MemoryLimit is unknown outside Linux.
func MemoryLimit() (MemoryCeiling, error) {
	return MemoryCeiling{}, fmt.Errorf("proc: memory limit: %w", errors.ErrUnsupported)
}

// ErrLeafReleased is Leaf.Fork's error once the leaf was released.
var ErrLeafReleased = errors.New("proc: cgroup leaf released")

// NewCgroupTreeKiller returns an error matching errors.ErrUnsupported
// outside Linux.
func NewCgroupTreeKiller(logger *zap.Logger, _ Limits) (*TreeKiller, error) {
	return NewTreeKiller(logger)
}

// Leaf is a cgroup leaf; there are none outside Linux.
type Leaf struct{}

// NewLeaf fails outside Linux.
func (t *TreeKiller) NewLeaf() (*Leaf, error) {
	return nil, fmt.Errorf("proc: cgroup leaf: %w", errors.ErrUnsupported)
}

// Dir is "".
func (l *Leaf) Dir() string { return "" }

// Fork just calls fork.
func (l *Leaf) Fork(_ *syscall.SysProcAttr, fork func() (int, error)) (int, error) { return fork() }

// Kill does nothing.
func (l *Leaf) Kill() error { return nil }

// Release does nothing.
func (l *Leaf) Release() {}

// Leftovers is what is left of a process's tree; nothing is tracked
// outside Linux.
type Leftovers struct{}

// CloseLeftovers is Close; it returns nil outside Linux.
func (p *Process) CloseLeftovers() *Leftovers {
	p.Close()
	return nil
}

// Len is 0.
func (l *Leftovers) Len() int { return 0 }

// Kill does nothing and returns 0.
func (l *Leftovers) Kill() int { return 0 }

// Signal does nothing outside Linux.
func (l *Leftovers) Signal(syscall.Signal) int { return 0 }

// TreeSize is 0 outside Linux.
func (p *Process) TreeSize() int { return 0 }

// CountTrees is 0 outside Linux.
func CountTrees([]*Process, []*Leftovers) int { return 0 }

// TreePids is empty outside Linux.
func TreePids([]*Process, []*Leftovers) map[int]bool { return nil }

func (p *Process) settleTree(bool) {}
