//go:build !(linux && (amd64 || arm64))

package ptrace

import (
	"context"
	"errors"
	"os"

	"go.uber.org/zap"

	"github.com/codexec/codex/shelltool/escalate"
)

// Config is what a Session needs besides its root process.
type Config struct {
	Decider   escalate.Decider
	Escalator *escalate.Escalator
	Logger    *zap.Logger
}

// QuickDecider is an optional interface of Config.Decider: a decision
// without blocking when ok.
type QuickDecider interface {
	DecideQuick(r escalate.Request) (d escalate.Decision, ok bool)
}

// SpawnFunc starts the root process of a Session and returns its pid.
type SpawnFunc func() (pid int, err error)

// Session traces one process tree; not available on this platform.
type Session struct{}

// ErrUnsupported is Start's error where exec tracing is not implemented.
var ErrUnsupported = errors.New("ptrace interception needs Linux on amd64 or arm64")

// Start fails with ErrUnsupported and closes sync.
func Start(_ context.Context, _ Config, _ SpawnFunc, sync *os.File) (*Session, error) {
	sync.Close()
	return nil, ErrUnsupported
}

// Pid is not reachable (Start never succeeds).
func (s *Session) Pid() int { return 0 }

// Exited is not reachable.
func (s *Session) Exited() <-chan struct{} { return nil }

// ExitCode is not reachable.
func (s *Session) ExitCode() int { return 0 }

// Kill is not reachable.
func (s *Session) Kill() {}

// Close is not reachable.
func (s *Session) Close() {}
