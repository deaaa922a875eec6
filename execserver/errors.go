package execserver

import (
	"errors"
	"io/fs"
	"strconv"
	"syscall"

	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/sandbox"
	"github.com/codexec/codex/wire"
)

// Wire errors of the handshake and process methods; their texts are in
// package wire. Decisions use the codes (errors.Is), never the texts.

// errProcessSandbox maps a sandbox parse or resolution failure of
// process/start to -32602 (docs/protocol.md §3).
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

// errSpawn maps a failed spawn to -32603 with the OS error text and [ext]
// data {"op","errno"} (docs/protocol.md §3): op is "chdir" when the working
// directory failed and "exec" otherwise, errno the OS error number. Errors
// that carry no errno get no data.
func errSpawn(err error) error {
	we := wire.OSError(rpc.CodeInternalError, err)
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return we
	}
	op := "exec"
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Op == "chdir" {
		op = "chdir"
	}
	we.Data = []byte(`{"op":"` + op + `","errno":` + strconv.Itoa(int(errno)) + `}`)
	return we
}
