package unifiedexec

import (
	"errors"
	"fmt"
	"testing"

	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wire"
)

// TestRetryableByCode: a resume gives up only on an unknown session, told by
// the code of the initialize answer, not by its text.
func TestRetryableByCode(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"unknown session", fmt.Errorf("initialize: %w", wire.InitializeError(true, wire.ErrUnknownSessionID("s1"))), false},
		{"unknown session, other text", fmt.Errorf("initialize: %w", wire.InitializeError(true, &rpc.Error{Code: rpc.CodeInvalidRequest, Message: "gone"})), false},
		{"text alone", errors.New("unknown session id s1"), true},
		{"attached elsewhere", fmt.Errorf("initialize: %w", wire.InitializeError(true, wire.ErrSessionAlreadyAttached("s1"))), true},
		{"catch-up read", fmt.Errorf("process/read: %w", wire.ErrUnknownProcess("p1")), true},
		{"dial", errors.New("connection refused"), true},
	}
	for _, c := range cases {
		if got := retryable(c.err); got != c.want {
			t.Errorf("%s: retryable(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}
