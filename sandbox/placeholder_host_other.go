//go:build !linux

package sandbox

// GuardLog receives the host guard's problems: a message, the path and
// the error (nil when there is none). A nil GuardLog discards them.
type GuardLog func(msg, path string, err error)

// HostGuard holds nothing where there is no sandbox helper; a nil one is
// what GuardPlan returns.
type HostGuard struct{}

// GuardPlan does nothing where there is no sandbox helper.
func GuardPlan(*Plan, GuardLog) *HostGuard { return nil }

// Release does nothing.
func (*HostGuard) Release() {}
