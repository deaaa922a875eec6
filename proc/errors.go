package proc

import (
	"errors"

	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/sandbox"
	"github.com/codexec/codex/wire"
)

// Wire errors of the handshake and process methods; their texts are in
// package wire. Decisions use the codes (errors.Is), never the texts.

// errProcessSandbox maps a sandbox parse or resolution failure of
// process/start to -32602 (protocol.md §3).
func errProcessSandbox(err error) error {
	var we *rpc.Error
	switch {
	case errors.Is(err, sandbox.ErrUnenforceable):
		return wire.ErrSandboxUnenforceable()
	case errors.Is(err, sandbox.ErrInvalidPolicy):
		if errors.As(err, &we) {
			return wire.ErrInvalidSandboxPath(we.Message)
		}
		return rpc.Errorf(rpc.CodeInvalidParams, "%s", err.Error())
	}
	return wire.ErrSandboxPrepare(err)
}

// errSpawn maps a failed spawn to -32603 with the OS error text.
func errSpawn(err error) error { return wire.OSError(rpc.CodeInternalError, err) }
