// Strict JSON-RPC 2.0 input (Options.StrictJSONRPC): the checks MCP peers
// expect, with the standard codes and the message's id when it is known.

package rpc

import (
	"bytes"
	"encoding/json"
	"errors"
)

// strictEnvelope reads the members the strict checks need.
type strictEnvelope struct {
	JSONRPC *string         `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
}

// decodeStrict classifies data like DecodeMessage after checking that it is
// one JSON-RPC 2.0 message. A failure returns the wire error to answer and
// the id to answer it with (invalid, that is null, when unknown): -32700
// for input that is not JSON, -32600 for anything else.
func decodeStrict(data []byte) (any, ID, *Error) {
	data = bytes.TrimSpace(data)
	if !json.Valid(data) {
		var v any
		err := json.Unmarshal(data, &v)
		if err == nil {
			err = errors.New("invalid JSON")
		}
		return nil, ID{}, Errorf(CodeParseError, "parse error: %v", err)
	}
	if len(data) > 0 && data[0] == '[' {
		return nil, ID{}, Errorf(CodeInvalidRequest, "invalid request: batches are not supported")
	}
	var env strictEnvelope
	if len(data) > 0 && data[0] == '{' {
		_ = json.Unmarshal(data, &env) // valid JSON: only a wrong member type can fail
	}
	var id ID
	if env.ID != nil && id.UnmarshalJSON(env.ID) != nil {
		id = ID{}
	}
	msg, err := DecodeMessage(data)
	if err != nil {
		return nil, ID{}, Errorf(CodeInvalidRequest, "invalid request: %v", err)
	}
	if env.JSONRPC == nil || *env.JSONRPC != "2.0" {
		return nil, id, Errorf(CodeInvalidRequest, `invalid request: "jsonrpc" must be "2.0"`)
	}
	return msg, id, nil
}
