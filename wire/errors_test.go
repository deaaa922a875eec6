package wire_test

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wire"
)

// TestIsHelpersMatchCodesNotTexts: the helpers look at the code through any
// wrapping and ignore the message.
func TestIsHelpersMatchCodesNotTexts(t *testing.T) {
	notFound := fmt.Errorf("fs/getMetadata: %w", &rpc.Error{Code: wire.CodeNotFound, Message: "anything"})
	attached := fmt.Errorf("initialize: %w", &rpc.Error{Code: wire.CodeSessionAttached, Message: "x"})
	invalid := &rpc.Error{Code: rpc.CodeInvalidRequest, Message: "No such file or directory (os error 2)"}
	cases := []struct {
		name string
		is   func(error) bool
		yes  []error
		no   []error
	}{
		{"IsNotFound", wire.IsNotFound, []error{notFound, wire.OSError(wire.CodeNotFound, syscall.ENOENT)}, []error{invalid, attached, errors.New("not found"), nil}},
		{"IsSessionAttached", wire.IsSessionAttached, []error{attached, wire.ErrSessionAlreadyAttached("s")}, []error{notFound, invalid, nil}},
		{"IsSessionLimit", wire.IsSessionLimit, []error{wire.ErrSessionLimitReached(2)}, []error{attached, invalid, nil}},
		{"IsInvalidRequest", wire.IsInvalidRequest, []error{invalid, wire.ErrUnknownProcess("p")}, []error{notFound, wire.ErrSandboxUnenforceable()}},
		{"IsInvalidParams", wire.IsInvalidParams, []error{wire.ErrSandboxUnenforceable()}, []error{invalid}},
	}
	for _, c := range cases {
		for _, err := range c.yes {
			if !c.is(err) {
				t.Errorf("%s(%v) = false", c.name, err)
			}
		}
		for _, err := range c.no {
			if c.is(err) {
				t.Errorf("%s(%v) = true", c.name, err)
			}
		}
	}
}

// TestInitializeError: only a -32600 answer to a resuming initialize is an
// unknown session; the wire error stays reachable with errors.As.
func TestInitializeError(t *testing.T) {
	refused := wire.ErrUnknownSessionID("s1")
	got := wire.InitializeError(true, refused)
	if !wire.IsUnknownSession(got) || !wire.IsInvalidRequest(got) || got.Error() != refused.Error() {
		t.Fatalf("resumed -32600: IsUnknownSession=%v IsInvalidRequest=%v text %q", wire.IsUnknownSession(got), wire.IsInvalidRequest(got), got)
	}
	var we *rpc.Error
	if !errors.As(fmt.Errorf("initialize: %w", got), &we) || we.Code != rpc.CodeInvalidRequest {
		t.Fatalf("errors.As lost the wire error: %v", we)
	}
	for _, c := range []struct {
		resumed bool
		err     error
	}{
		{false, refused},
		{true, wire.ErrSessionAlreadyAttached("s1")},
		{true, errors.New("unknown session id s1")},
	} {
		if wire.IsUnknownSession(wire.InitializeError(c.resumed, c.err)) {
			t.Errorf("InitializeError(%v, %v) is an unknown session", c.resumed, c.err)
		}
	}
	if wire.InitializeError(true, nil) != nil {
		t.Error("InitializeError(true, nil) != nil")
	}
}

// TestParseError pins the reference's wording per transport.
func TestParseError(t *testing.T) {
	err := errors.New("bad")
	cases := []struct {
		ws, tooLarge bool
		want         string
	}{
		{false, false, "failed to parse JSON-RPC message from L: bad"},
		{false, true, "failed to parse JSON-RPC message from L: bad"},
		{true, false, "failed to parse websocket JSON-RPC message from L: bad"},
		{true, true, "failed to parse JSON-RPC message from L: bad"},
	}
	for _, c := range cases {
		if got := wire.ParseError(c.ws)("L", c.tooLarge, err); got != c.want {
			t.Errorf("ParseError(%v)(tooLarge=%v) = %q, want %q", c.ws, c.tooLarge, got, c.want)
		}
	}
	if !strings.HasPrefix(wire.LabelWebSocketPrefix, "exec-server ") || wire.LabelStdio != "exec-server stdio" {
		t.Errorf("labels %q %q", wire.LabelStdio, wire.LabelWebSocketPrefix)
	}
}
