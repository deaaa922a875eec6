//go:build !linux

package reap

import (
	"errors"
	"time"

	"go.uber.org/zap"
)

// Reaper reaps orphaned children; it exists on Linux only.
type Reaper struct{}

// Start fails: reaping orphans needs Linux (PR_SET_CHILD_SUBREAPER).
func Start(*zap.Logger) (*Reaper, error) {
	return nil, errors.New("reaping orphans is supported on Linux only")
}

// StartChildren returns a Reaper that does nothing.
func StartChildren(*zap.Logger, time.Duration) *Reaper { return &Reaper{} }

// Reaped returns 0.
func (*Reaper) Reaped() int64 { return 0 }

// Close does nothing.
func (*Reaper) Close() {}

// bootTicks is 0: nothing is reaped outside Linux.
func bootTicks() uint64 { return 0 }
