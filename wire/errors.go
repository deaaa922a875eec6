package wire

import (
	"errors"
	"fmt"
	"strconv"
	"syscall"
	"unicode"
	"unicode/utf8"

	"github.com/codexec/codex/rpc"
)

// Error codes of the exec-server beyond the JSON-RPC ones of package rpc
// (docs/protocol.md §3).
const (
	// CodeNotFound is a filesystem path that does not exist (ENOENT).
	CodeNotFound = -32004
	// CodeSessionAttached is an initialize whose resumeSessionId names a
	// session another connection holds.
	CodeSessionAttached = -32010
	// CodeSessionLimit is an initialize that would make a new session on a
	// server holding --max-sessions sessions: the server is full, not the
	// request wrong; another server, or this one later, can take it.
	CodeSessionLimit = -32011
)

// Sentinels for errors.Is: an *rpc.Error matches one of them when its code
// is the same, whatever its text (rpc.Error.Is compares codes).
var (
	ErrNotFound        = &rpc.Error{Code: CodeNotFound, Message: "not found"}
	ErrSessionAttached = &rpc.Error{Code: CodeSessionAttached, Message: "session already attached"}
	ErrSessionLimit    = &rpc.Error{Code: CodeSessionLimit, Message: "session limit"}
	// ErrUnknownSession marks a failed initialize whose resumeSessionId the
	// server does not know; see InitializeError.
	ErrUnknownSession = errors.New("unknown exec-server session")
)

// IsNotFound reports whether err carries a wire error of code -32004.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// IsSessionAttached reports whether err carries a wire error of code -32010.
func IsSessionAttached(err error) bool { return errors.Is(err, ErrSessionAttached) }

// IsSessionLimit reports whether err carries a wire error of code -32011.
func IsSessionLimit(err error) bool { return errors.Is(err, ErrSessionLimit) }

// IsInvalidRequest reports whether err carries a wire error of code -32600.
func IsInvalidRequest(err error) bool { return errors.Is(err, rpc.ErrInvalidRequest) }

// IsInvalidParams reports whether err carries a wire error of code -32602.
func IsInvalidParams(err error) bool { return errors.Is(err, rpc.ErrInvalidParams) }

// IsUnknownSession reports whether err is (or wraps) an initialize failure
// classified by InitializeError as an unknown session.
func IsUnknownSession(err error) bool { return errors.Is(err, ErrUnknownSession) }

// InitializeError classifies the error of an initialize call on a fresh
// connection. When the call resumed a session, a -32600 answer can only mean
// that the server does not know the session (docs/protocol.md §6.1: the other
// -32600 answers of initialize need an earlier initialize on the same
// connection), so the result also matches ErrUnknownSession. err is kept in
// the chain either way; nil stays nil.
func InitializeError(resumed bool, err error) error {
	if err == nil || !resumed || !IsInvalidRequest(err) {
		return err
	}
	return &unknownSession{err: err}
}

type unknownSession struct{ err error }

func (e *unknownSession) Error() string   { return e.err.Error() }
func (e *unknownSession) Unwrap() []error { return []error{ErrUnknownSession, e.err} }

// Messages of the handshake and process methods, with the exact texts of
// docs/protocol.md §3. Ids and method names are clipped (rpc.Clip).

// ErrBeforeInitialize is a method of family called before initialize.
func ErrBeforeInitialize(family string) *rpc.Error {
	return rpc.Errorf(rpc.CodeInvalidRequest, "client must call initialize before using %s methods", family)
}

// ErrBeforeInitialized is a method of family called before initialized.
func ErrBeforeInitialized(family string) *rpc.Error {
	return rpc.Errorf(rpc.CodeInvalidRequest, "client must send initialized before using %s methods", family)
}

// ErrInitializeTwice is a second initialize on one connection.
func ErrInitializeTwice() *rpc.Error {
	return rpc.Errorf(rpc.CodeInvalidRequest, "initialize may only be sent once per connection")
}

// ErrUnknownSessionID is an initialize resuming a session the server does
// not know.
func ErrUnknownSessionID(id string) *rpc.Error {
	return rpc.Errorf(rpc.CodeInvalidRequest, "unknown session id %s", rpc.Clip(id))
}

// ErrSessionEnded is a process/start on a connection whose session was
// ended by session/end (docs/protocol.md §10.5).
func ErrSessionEnded(id string) *rpc.Error {
	return rpc.Errorf(rpc.CodeInvalidRequest, "session %s has ended", rpc.Clip(id))
}

// ErrSessionAlreadyAttached is an initialize resuming a session another
// connection holds.
func ErrSessionAlreadyAttached(id string) *rpc.Error {
	return rpc.Errorf(CodeSessionAttached, "session %s is already attached to another connection", rpc.Clip(id))
}

// ErrSessionLimitReached is an initialize for a new session on a server
// holding its limit of sessions.
func ErrSessionLimitReached(limit int) *rpc.Error {
	return rpc.Errorf(CodeSessionLimit, "server at its session limit (%d sessions); try another server or later", limit)
}

// ErrMethodNotImplemented is a known method the server does not serve.
func ErrMethodNotImplemented(method string) *rpc.Error {
	return rpc.Errorf(rpc.CodeMethodNotFound, "exec-server stub does not implement `%s` yet", rpc.Clip(method))
}

// ErrUnknownProcess is a process id the session does not know.
func ErrUnknownProcess(id string) *rpc.Error {
	return rpc.Errorf(rpc.CodeInvalidRequest, "unknown process id %s", rpc.Clip(id))
}

// ErrProcessExists is a process/start with an id already in use.
func ErrProcessExists(id string) *rpc.Error {
	return rpc.Errorf(rpc.CodeInvalidRequest, "process %s already exists", rpc.Clip(id))
}

// ErrProcessStarting is a request for a process whose start is under way.
func ErrProcessStarting(id string) *rpc.Error {
	return rpc.Errorf(rpc.CodeInvalidRequest, "process id %s is starting", rpc.Clip(id))
}

// ErrStartCancelled is a start abandoned because the session ended.
func ErrStartCancelled(id string) *rpc.Error {
	return rpc.Errorf(rpc.CodeInvalidRequest, "process %s start was cancelled", rpc.Clip(id))
}

// ErrShuttingDown refuses a new session, process/start or command/exec
// while the server drains (docs/operations.md §5).
func ErrShuttingDown() *rpc.Error {
	return rpc.Errorf(rpc.CodeInvalidRequest, "server is shutting down")
}

// ErrTooManyProcesses is a process/start over the per-session limit.
func ErrTooManyProcesses(limit int) *rpc.Error {
	return rpc.Errorf(rpc.CodeInvalidRequest, "too many processes in this session (limit %d)", limit)
}

// ErrStdinFull is a process/write while limit bytes already wait.
func ErrStdinFull(id string, limit int64) *rpc.Error {
	return rpc.Errorf(rpc.CodeInvalidRequest, "stdin of process %s is full: writes of this connection already wait for %d bytes to be read", rpc.Clip(id), limit)
}

// ErrNotPTY is a process/resize of a process without a PTY.
func ErrNotPTY(id string) *rpc.Error {
	return rpc.Errorf(rpc.CodeInvalidRequest, "process %s is not a PTY", rpc.Clip(id))
}

// ErrCloseStdinPTY is a process/closeStdin of a PTY process.
func ErrCloseStdinPTY() *rpc.Error {
	return rpc.Errorf(rpc.CodeInvalidRequest, "closeStdin is not supported for PTY processes")
}

// ErrUnexpectedNotification is a notification the server does not take.
func ErrUnexpectedNotification(method string) *rpc.Error {
	return rpc.Errorf(rpc.CodeInvalidRequest, "unexpected notification %s", rpc.Clip(method))
}

// ErrSandboxUnenforceable is a sandbox intent the executor cannot enforce.
func ErrSandboxUnenforceable() *rpc.Error {
	return rpc.Errorf(rpc.CodeInvalidParams, "sandbox intent cannot be enforced on this executor")
}

// ErrInvalidSandboxPath is a sandbox permission path that is not a valid
// URI; detail is the path error's text.
func ErrInvalidSandboxPath(detail string) *rpc.Error {
	return rpc.Errorf(rpc.CodeInvalidParams, "invalid sandbox permission path URI: %s", detail)
}

// ErrSandboxPrepare is a sandbox that failed to resolve for a start.
func ErrSandboxPrepare(err error) *rpc.Error {
	return rpc.Errorf(rpc.CodeInvalidParams, "failed to prepare process sandbox: %s", err.Error())
}

// Messages of the fs/* methods, with the exact texts of docs/protocol.md §3.
// The filesystem layer (fshelper) builds its errors from them; the codes
// are chosen there (fshelper.WireError).
const (
	MsgSymlink            = "path contains a symbolic link"
	MsgFileTooLargeFmt    = "file is too large to read: limit is %d bytes"
	MsgNotFile            = "path is not a file"
	MsgNotFileFmt         = "path `%s` is not a file"
	MsgCopyNeedsRecursive = "fs/copy requires recursive: true when sourcePath is a directory"
	MsgCopyIntoSelf       = "fs/copy cannot copy a directory to itself or one of its descendants"
	MsgCopyUnsupported    = "fs/copy only supports regular files, directories, and symlinks"
	MsgTooManyEntriesFmt  = "directory has too many entries: limit is %d entries"
	MsgBadBase64Fmt       = "fs/writeFile requires valid base64 dataBase64: %v"
	MsgNullFieldFmt       = "invalid type: null, expected %s"
)

// ErrFSSandboxUnenforceable is an fs/* sandbox the executor cannot enforce.
func ErrFSSandboxUnenforceable() *rpc.Error {
	return rpc.Errorf(rpc.CodeInvalidRequest, "filesystem sandbox cannot be enforced on this executor")
}

// ErrFSSandboxPrepare is an fs/* sandbox that failed to resolve.
func ErrFSSandboxPrepare(err error) *rpc.Error {
	return rpc.Errorf(rpc.CodeInvalidRequest, "failed to prepare fs sandbox: %v", err)
}

// OSErrorMessage formats an errno the way the reference words OS errors on
// the wire: the C library text with a capital first letter and the number,
// e.g. "No such file or directory (os error 2)".
func OSErrorMessage(errno syscall.Errno) string {
	s := errno.Error()
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:] + " (os error " + strconv.Itoa(int(errno)) + ")"
}

// OSError returns the wire error for an OS-level failure: code with the
// reference's text when err wraps an errno, and err's own text otherwise.
func OSError(code int, err error) *rpc.Error {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return &rpc.Error{Code: code, Message: OSErrorMessage(errno)}
	}
	return &rpc.Error{Code: code, Message: err.Error()}
}

// Transport labels of the exec-server: they name the transport in logs and
// in the parse-error message a client sees.
const (
	LabelStdio           = "exec-server stdio"
	LabelWebSocketPrefix = "exec-server websocket " // + the peer address
)

// ParseError returns the rpc.Options.ParseError of the exec-server for a
// transport: the reference's text "failed to parse [websocket ]JSON-RPC
// message from <label>: <err>". The "websocket " word appears on WebSocket
// transports for a message that is not valid JSON-RPC, not for one over the
// size limit (as the reference words them).
func ParseError(websocket bool) func(label string, tooLarge bool, err error) string {
	return func(label string, tooLarge bool, err error) string {
		if websocket && !tooLarge {
			return fmt.Sprintf("failed to parse websocket JSON-RPC message from %s: %v", label, err)
		}
		return fmt.Sprintf("failed to parse JSON-RPC message from %s: %v", label, err)
	}
}

// MinSharedSecretBytes is the shortest shared secret of signed bearer
// tokens (`--ws-auth signed-bearer-token`, docs/protocol.md §1.3) that the
// server's verifier accepts and the client mints with (after surrounding
// whitespace is trimmed): 256 bits, the size of an HS256 key.
const MinSharedSecretBytes = 32
