package rpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// ID is a JSON-RPC request id: an int64 or a string. The zero value is "no
// id". An ID marshals back with the JSON type it was received with.
type ID struct {
	num   int64
	str   string
	isStr bool
	valid bool
}

// Int64ID returns an integer id.
func Int64ID(n int64) ID { return ID{num: n, valid: true} }

// StringID returns a string id.
func StringID(s string) ID { return ID{str: s, isStr: true, valid: true} }

// IsValid reports whether the id is set.
func (id ID) IsValid() bool { return id.valid }

// String formats the id for logs.
func (id ID) String() string {
	switch {
	case !id.valid:
		return "<none>"
	case id.isStr:
		return strconv.Quote(id.str)
	default:
		return strconv.FormatInt(id.num, 10)
	}
}

// AppendJSON appends the id's JSON form to b.
func (id ID) AppendJSON(b []byte) []byte {
	switch {
	case !id.valid:
		return append(b, "null"...)
	case id.isStr:
		s, _ := json.Marshal(id.str)
		return append(b, s...)
	default:
		return strconv.AppendInt(b, id.num, 10)
	}
}

// MarshalJSON implements json.Marshaler.
func (id ID) MarshalJSON() ([]byte, error) { return id.AppendJSON(nil), nil }

// UnmarshalJSON accepts a string or an integer; anything else is an error.
func (id *ID) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*id = StringID(s)
		return nil
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return fmt.Errorf("invalid request id %s: expected a string or an integer", Clip(string(b)))
	}
	*id = Int64ID(n)
	return nil
}

// Request is an incoming request or, when ID is not valid, a notification.
type Request struct {
	ID     ID
	Method string
	Params json.RawMessage // nil when absent or null
	// Decoded holds the params already decoded by Options.Predecode (then
	// Params is nil and the request is a notification); nil otherwise.
	Decoded any
}

// IsNotification reports whether the message carries no id.
func (r *Request) IsNotification() bool { return !r.ID.IsValid() }

// Response is an incoming response to a request this side sent.
type Response struct {
	ID     ID
	Result json.RawMessage
	Error  *Error
}

// envelope is the decoding shape of every message. Unknown members,
// "jsonrpc" and "trace" included, are ignored.
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method *string         `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *Error          `json:"error"`
}

var errNotObject = errors.New("expected a JSON object")

// DecodeMessage classifies one message (docs/protocol.md §2): a *Request (which may
// be a notification) or a *Response. Any failure is a parse error for the
// caller to answer with id -1. The result does not alias data (the
// framers lend data: see lender).
func DecodeMessage(data []byte) (any, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return nil, errNotObject
	}
	var env envelope
	if err := unmarshalEnvelope(data, &env); err != nil {
		return nil, err
	}
	var id ID
	if env.ID != nil {
		if err := id.UnmarshalJSON(env.ID); err != nil {
			return nil, err
		}
	}
	if env.Method != nil {
		req := &Request{ID: id, Method: *env.Method}
		if p := bytes.TrimSpace(env.Params); len(p) > 0 && !bytes.Equal(p, []byte("null")) {
			req.Params = p
		}
		return req, nil
	}
	if !id.IsValid() {
		return nil, errors.New("message has neither method nor id")
	}
	if env.Result != nil {
		return &Response{ID: id, Result: env.Result}, nil
	}
	if env.Error != nil {
		return &Response{ID: id, Error: env.Error}, nil
	}
	return nil, errors.New("response has neither result nor error")
}

// MaxEchoBytes bounds how much of a client-supplied name (a method, an id)
// an error message repeats, so that an answer stays small whatever the size
// of the request's fields.
const MaxEchoBytes = 1024

// Clip returns s cut to at most MaxEchoBytes bytes on a UTF-8 boundary, with
// "…" appended when it was cut.
func Clip(s string) string {
	if len(s) <= MaxEchoBytes {
		return s
	}
	n := MaxEchoBytes
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
