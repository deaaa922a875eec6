package agenttool_test

import (
	"context"
	"testing"
	"time"

	"github.com/codexec/codex/internal/testbin"
	"github.com/codexec/codex/unifiedexec"
)

// binary is the codex binary built once for the package's tests.
var binary string

// TestMain puts that build first in $PATH, so the examples can Supervise
// with zero options as a user would.
func TestMain(m *testing.M) { testbin.MainOnPath(m, &binary, "../..") }

// supervised starts a Client supervising a stdio server child of the test
// binary's codex build; both end with the test. ctx expires after 30 s.
func supervised(t *testing.T) (context.Context, *unifiedexec.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	c, err := unifiedexec.Supervise(ctx, unifiedexec.SuperviseOptions{Path: binary})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return ctx, c
}
