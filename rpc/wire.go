package rpc

import (
	"encoding/json"
	"errors"
	"fmt"
)

// The error codes of JSON-RPC 2.0. Application codes belong to the
// application's package (the exec-server's are in package wire).
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
)

// Error is a JSON-RPC error object. Its Is method compares codes only, so a
// sentinel such as ErrInvalidParams matches any error with the same code,
// however it was wrapped.
//
// Data is the optional structured "data" member (nil: absent). The server
// sets it only where docs/protocol.md documents it, so clients can match on it
// instead of the message text.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string { return e.Message }

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Sentinels for errors.Is checks on codes.
var (
	ErrInvalidRequest = &Error{Code: CodeInvalidRequest, Message: "invalid request"}
	ErrMethodNotFound = &Error{Code: CodeMethodNotFound, Message: "method not found"}
	ErrInvalidParams  = &Error{Code: CodeInvalidParams, Message: "invalid params"}
	ErrInternal       = &Error{Code: CodeInternalError, Message: "internal error"}
)

// Errorf builds a wire error with the given code and a formatted message.
func Errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ToWire converts any error into the wire error sent to a peer. An *Error
// anywhere in the chain is used as is; anything else becomes -32603 with the
// error's text.
func ToWire(err error) *Error {
	var we *Error
	if errors.As(err, &we) {
		return we
	}
	return &Error{Code: CodeInternalError, Message: err.Error()}
}
