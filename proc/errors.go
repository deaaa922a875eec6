package proc

import (
	"errors"
	"io/fs"
	"strconv"
	"syscall"

	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/sandbox"
)

// Wire errors of the handshake and process methods, with the exact texts of
// protocol.md §3. Decisions use the codes (errors.Is), never the texts.

func errBeforeInitialize(family string) error {
	return rpc.Errorf(rpc.CodeInvalidRequest, "client must call initialize before using %s methods", family)
}

func errBeforeInitialized(family string) error {
	return rpc.Errorf(rpc.CodeInvalidRequest, "client must send initialized before using %s methods", family)
}

func errInitializeTwice() error {
	return rpc.Errorf(rpc.CodeInvalidRequest, "initialize may only be sent once per connection")
}

func errUnknownSessionID(id string) error {
	return rpc.Errorf(rpc.CodeInvalidRequest, "unknown session id %s", rpc.Clip(id))
}

func errSessionAlreadyAttached(id string) error {
	return rpc.Errorf(rpc.CodeSessionAttached, "session %s is already attached to another connection", rpc.Clip(id))
}

func errMethodNotImplemented(method string) error {
	return rpc.Errorf(rpc.CodeMethodNotFound, "exec-server stub does not implement `%s` yet", rpc.Clip(method))
}

func errUnknownProcess(id string) error {
	return rpc.Errorf(rpc.CodeInvalidRequest, "unknown process id %s", rpc.Clip(id))
}

func errProcessExists(id string) error {
	return rpc.Errorf(rpc.CodeInvalidRequest, "process %s already exists", rpc.Clip(id))
}

func errProcessStarting(id string) error {
	return rpc.Errorf(rpc.CodeInvalidRequest, "process id %s is starting", rpc.Clip(id))
}

func errStartCancelled(id string) error {
	return rpc.Errorf(rpc.CodeInvalidRequest, "process %s start was cancelled", rpc.Clip(id))
}

func errTooManyProcesses(limit int) error {
	return rpc.Errorf(rpc.CodeInvalidRequest, "too many processes in this session (limit %d)", limit)
}

func errStdinFull(id string, limit int64) error {
	return rpc.Errorf(rpc.CodeInvalidRequest, "stdin of process %s is full: writes of this connection already wait for %d bytes to be read", rpc.Clip(id), limit)
}

func errNotPTY(id string) error {
	return rpc.Errorf(rpc.CodeInvalidRequest, "process %s is not a PTY", rpc.Clip(id))
}

func errCloseStdinPTY() error {
	return rpc.Errorf(rpc.CodeInvalidRequest, "closeStdin is not supported for PTY processes")
}

func errUnexpectedNotification(method string) *rpc.Error {
	return rpc.Errorf(rpc.CodeInvalidRequest, "unexpected notification %s", rpc.Clip(method))
}

func errSandboxUnenforceable() error {
	return rpc.Errorf(rpc.CodeInvalidParams, "sandbox intent cannot be enforced on this executor")
}

// errProcessSandbox maps a sandbox parse or resolution failure of
// process/start to -32602 (protocol.md §3).
func errProcessSandbox(err error) error {
	var we *rpc.Error
	switch {
	case errors.Is(err, sandbox.ErrUnenforceable):
		return errSandboxUnenforceable()
	case errors.Is(err, sandbox.ErrInvalidPolicy):
		if errors.As(err, &we) {
			return rpc.Errorf(rpc.CodeInvalidParams, "invalid sandbox permission path URI: %s", we.Message)
		}
		return rpc.Errorf(rpc.CodeInvalidParams, "%s", err.Error())
	}
	return rpc.Errorf(rpc.CodeInvalidParams, "failed to prepare process sandbox: %s", err.Error())
}

// errSpawn maps a failed spawn to -32603 with the OS error text and [ext]
// data {"op","errno"} (protocol.md §3): op is "chdir" when the working
// directory failed and "exec" otherwise, errno the OS error number. Errors
// that carry no errno get no data.
func errSpawn(err error) error {
	we := rpc.OSError(rpc.CodeInternalError, err)
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
