package rpc

import (
	"context"
	"errors"
)

// Handler answers the requests and notifications of one connection. For a
// request, Handle returns the result to send (marshalled with encoding/json,
// or sent verbatim when it is a json.RawMessage) or an error (sent as a wire
// error, see ToWire). For a notification the result is ignored.
//
// Returning ErrAsync means the handler took responsibility for answering
// later with Conn.Respond; it usually started the work with Conn.Go.
// Returning an error made by CloseConn ends the connection.
type Handler interface {
	Handle(ctx context.Context, req *Request) (any, error)
}

// Preempter is an optional interface of a Handler. Preempt sees every request
// before it is queued behind earlier ones and may answer it at once (ok =
// true). It runs on the connection's reading goroutine, so it must not block.
// It is how control requests are answered while other requests wait.
type Preempter interface {
	Preempt(ctx context.Context, req *Request) (result any, err error, ok bool)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, req *Request) (any, error)

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, req *Request) (any, error) { return f(ctx, req) }

var _ Handler = HandlerFunc(nil)

// ErrAsync is returned by a Handler that will answer later (Conn.Respond).
var ErrAsync = errors.New("rpc: the response is sent asynchronously")

// ErrClosed is returned by operations on a connection that has ended.
var ErrClosed = errors.New("rpc: connection closed")

// closeError asks the connection to send Final (if not nil) with id -1 and
// then end.
type closeError struct{ Final *Error }

func (e *closeError) Error() string {
	if e.Final != nil {
		return "closing connection: " + e.Final.Message
	}
	return "closing connection"
}

// CloseConn returns an error that, returned from Handle, ends the connection
// after sending final (if not nil) as an error with id -1.
func CloseConn(final *Error) error { return &closeError{Final: final} }
