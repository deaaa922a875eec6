//go:build !linux

package execserver

import (
	"github.com/codexec/codex/sandbox"
	"go.uber.org/zap"
)

// placeholderSet has nothing to share where there is no sandbox helper.
type placeholderSet struct{}

// protectGuard holds nothing where there is no sandbox helper.
type protectGuard struct{}

func (*placeholderSet) guard(*sandbox.Plan, *zap.Logger) *protectGuard { return nil }

func (*protectGuard) release() {}
