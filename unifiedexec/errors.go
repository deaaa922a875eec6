package unifiedexec

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wire"
)

// ErrNotFound is matched (errors.Is) by the error of a Start whose program
// the server could not find, like exec.ErrNotFound for os/exec. The error
// also matches fs.ErrNotExist.
var ErrNotFound = errors.New("executable file not found")

// ErrOutputTruncated is matched (errors.Is) by the error of Communicate
// when the capture dropped output beyond OutputBytesCap; errors.As gives
// the *TruncatedError with the counts.
var ErrOutputTruncated = errors.New("output truncated")

// WireError is an error answered by the server. It is matched by code and
// structured data, never by text:
//
//   - errors.As(err, &*WireError) gives Method, Code, Message and Data;
//   - errors.As(err, &*rpc.Error) and errors.Is(err, rpc.ErrNotFound) (or
//     any rpc sentinel) still work, through Unwrap;
//   - errors.Is(err, fs.ErrNotExist) for -32004 (a missing path in fs/*)
//     and for a start whose program or working directory does not exist;
//   - errors.Is(err, ErrNotFound) for a start whose program does not exist;
//   - errors.Is(err, fs.ErrPermission) for a start refused with EACCES or
//     EPERM.
//
// Its text is the server's message.
type WireError struct {
	Method  string          // the request's method, e.g. "process/start"
	Code    int             // the JSON-RPC error code (rpc.Code…)
	Message string          // the server's text, for people only
	Data    json.RawMessage // the "data" member; nil when absent
	// Op and Errno come from the data of a failed process/start: Op is
	// "exec" or "chdir", Errno the OS error number (0 when absent).
	Op    string
	Errno int
}

func (e *WireError) Error() string { return e.Message }

// Unwrap returns the *rpc.Error with the same code, message and data.
func (e *WireError) Unwrap() error {
	return &rpc.Error{Code: e.Code, Message: e.Message, Data: e.Data}
}

// Is maps codes and start data to fs.ErrNotExist, fs.ErrPermission and
// ErrNotFound.
func (e *WireError) Is(target error) bool {
	switch target {
	case fs.ErrNotExist:
		return e.Code == wire.CodeNotFound || (e.Op != "" && e.Errno == int(syscall.ENOENT))
	case ErrNotFound:
		return e.Op == "exec" && e.Errno == int(syscall.ENOENT)
	case fs.ErrPermission:
		return e.Op != "" && (e.Errno == int(syscall.EACCES) || e.Errno == int(syscall.EPERM))
	}
	return false
}

// wireError converts a wire error of method into a *WireError; other
// errors are returned as they are.
func wireError(method string, err error) error {
	var re *rpc.Error
	if !errors.As(err, &re) {
		return err
	}
	we := &WireError{Method: method, Code: re.Code, Message: re.Message, Data: re.Data}
	if method == "process/start" && len(re.Data) > 0 {
		var d struct {
			Op    string `json:"op"`
			Errno int    `json:"errno"`
		}
		if json.Unmarshal(re.Data, &d) == nil {
			we.Op, we.Errno = d.Op, d.Errno
		}
	}
	return we
}

// TruncatedError is the error of Communicate when output was dropped
// beyond OutputBytesCap. It matches ErrOutputTruncated.
type TruncatedError struct {
	StdoutDropped, StderrDropped int64 // bytes not kept, per stream
}

func (e *TruncatedError) Error() string {
	return fmt.Sprintf("output truncated: %d stdout and %d stderr bytes beyond the capture cap were dropped",
		e.StdoutDropped, e.StderrDropped)
}

// Is reports whether target is ErrOutputTruncated.
func (e *TruncatedError) Is(target error) bool { return target == ErrOutputTruncated }
