package wire

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"strconv"
	"strings"

	"github.com/codexec/codex/rpc"
)

// MethodHTTPRequest makes an HTTP request from the executor's host;
// MethodHTTPBodyDelta (a notification, server → client) carries the body
// of a streamed response (docs/protocol.md §6.16).
const (
	MethodHTTPRequest   = "http/request"
	MethodHTTPBodyDelta = "http/request/bodyDelta"
)

// Redirect policies of http/request.
const (
	RedirectFollow = "follow"
	RedirectStop   = "stop"
)

// HTTPRequestParams are the params of http/request.
type HTTPRequestParams struct {
	Method    string `json:"method" rpc:"required"`
	URL       string `json:"url" rpc:"required"`
	RequestID string `json:"requestId" rpc:"required"`
	// Headers are sent in this order, repeated names kept (grouped by
	// name, as the reference's header map does).
	Headers    []HTTPHeader `json:"headers,omitempty"`
	BodyBase64 *Bytes       `json:"bodyBase64,omitempty" schema:"nullable"`
	// TimeoutMs bounds the whole request, body included; nil is none.
	TimeoutMs      *uint64 `json:"timeoutMs,omitempty" schema:"nullable"`
	StreamResponse bool    `json:"streamResponse,omitempty"`
	// RedirectPolicy is "follow" (the default) or "stop".
	RedirectPolicy string `json:"redirectPolicy,omitempty" jsonschema:"enum=follow,enum=stop"`
}

// HTTPHeader is one request header. With ValueEnvVar the value sent is
// Value followed by that variable of the server's environment.
type HTTPHeader struct {
	Name        string  `json:"name" rpc:"required"`
	Value       string  `json:"value" rpc:"required"`
	ValueEnvVar *string `json:"valueEnvVar,omitempty" schema:"nullable"`
}

// HTTPResponseHeader is one response header, its name lower-cased.
type HTTPResponseHeader struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// HTTPRequestResult is the result of http/request: the final response's
// status and headers in wire order, and its body (empty when streamed).
type HTTPRequestResult struct {
	Status     int                  `json:"status"`
	Headers    []HTTPResponseHeader `json:"headers"`
	BodyBase64 Bytes                `json:"bodyBase64"`
}

// HTTPBodyDeltaParams are the params of http/request/bodyDelta: seq
// counts from 1 per request; the last has Done and an empty delta, with
// Error set when reading the body failed.
type HTTPBodyDeltaParams struct {
	RequestID   string  `json:"requestId"`
	Seq         uint64  `json:"seq"`
	DeltaBase64 Bytes   `json:"deltaBase64"`
	Done        bool    `json:"done"`
	Error       *string `json:"error"`
}

// httpRequestFields are the members of HttpRequestParams in the
// reference's order (8, which an array of params must have).
var httpRequestFields = []string{"method", "url", "requestId", "headers", "bodyBase64", "timeoutMs", "streamResponse", "redirectPolicy"}

// DecodeHTTPRequestParams decodes the params of http/request with the
// reference's texts: members in arrival order, the first bad one failing,
// then a missing required one. Texts recorded in
// e2e/testdata/http_replay.json.
func DecodeHTTPRequestParams(raw json.RawMessage) (*HTTPRequestParams, error) {
	const name = "HttpRequestParams"
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		raw = json.RawMessage("null")
	}
	members := map[string]json.RawMessage{}
	var order []string
	switch raw[0] {
	case '{':
		var err error
		if order, err = objectMembersInto(raw, members); err != nil {
			return nil, err
		}
	case '[':
		var elems []json.RawMessage
		if err := json.Unmarshal(raw, &elems); err != nil {
			return nil, rpc.Errorf(rpc.CodeInvalidParams, "%s", err)
		}
		if len(elems) != len(httpRequestFields) {
			return nil, rpc.Errorf(rpc.CodeInvalidParams, "invalid length %d, expected struct %s with %d elements", len(elems), name, len(httpRequestFields))
		}
		for i, f := range httpRequestFields {
			members[f] = elems[i]
			order = append(order, f)
		}
	default:
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "invalid type: %s, expected struct %s", unexpected(raw), name)
	}
	p := &HTTPRequestParams{RedirectPolicy: RedirectFollow}
	for _, key := range order {
		v := members[key]
		var err error
		switch key {
		case "method":
			p.Method, err = keyString(v)
		case "url":
			p.URL, err = keyString(v)
		case "requestId":
			p.RequestID, err = keyString(v)
		case "headers":
			p.Headers, err = decodeHTTPHeaders(v)
		case "bodyBase64":
			if !isNull(bytes.TrimSpace(v)) {
				var s string
				if s, err = keyString(v); err == nil {
					var b []byte
					if b, err = DecodeBase64Strict(s); err == nil {
						body := Bytes(b)
						p.BodyBase64 = &body
					}
				}
			}
		case "timeoutMs":
			if !isNull(bytes.TrimSpace(v)) {
				var n uint64
				if err = decodeU64(v, &n); err == nil {
					p.TimeoutMs = &n
				}
			}
		case "streamResponse":
			switch string(bytes.TrimSpace(v)) {
			case "true":
				p.StreamResponse = true
			case "false":
			default:
				err = rpc.Errorf(rpc.CodeInvalidParams, "invalid type: %s, expected a boolean", unexpected(v))
			}
		case "redirectPolicy":
			p.RedirectPolicy, err = decodeRedirectPolicy(v)
		}
		if err != nil {
			return nil, err
		}
	}
	for _, f := range httpRequestFields[:3] {
		if _, ok := members[f]; !ok {
			return nil, rpc.Errorf(rpc.CodeInvalidParams, "missing field `%s`", f)
		}
	}
	return p, nil
}

func decodeHTTPHeaders(raw json.RawMessage) ([]HTTPHeader, error) {
	elems, err := keySequence(raw)
	if err != nil {
		return nil, err
	}
	out := make([]HTTPHeader, len(elems))
	for i, e := range elems {
		e = bytes.TrimSpace(e)
		if len(e) == 0 || e[0] != '{' {
			return nil, rpc.Errorf(rpc.CodeInvalidParams, "invalid type: %s, expected struct HttpHeader", unexpected(e))
		}
		members := map[string]json.RawMessage{}
		order, err := objectMembersInto(e, members)
		if err != nil {
			return nil, err
		}
		for _, key := range order {
			v := members[key]
			switch key {
			case "name":
				out[i].Name, err = keyString(v)
			case "value":
				out[i].Value, err = keyString(v)
			case "valueEnvVar":
				if !isNull(bytes.TrimSpace(v)) {
					var s string
					if s, err = keyString(v); err == nil {
						out[i].ValueEnvVar = &s
					}
				}
			}
			if err != nil {
				return nil, err
			}
		}
		for _, f := range []string{"name", "value"} {
			if _, ok := members[f]; !ok {
				return nil, rpc.Errorf(rpc.CodeInvalidParams, "missing field `%s`", f)
			}
		}
	}
	return out, nil
}

func decodeRedirectPolicy(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return "", rpc.Errorf(rpc.CodeInvalidParams, "invalid type: %s, expected string or map", unexpected(raw))
	}
	s, err := keyString(raw)
	if err != nil {
		return "", err
	}
	if s != RedirectFollow && s != RedirectStop {
		return "", rpc.Errorf(rpc.CodeInvalidParams, "unknown variant `%s`, expected `follow` or `stop`", rpc.Clip(s))
	}
	return s, nil
}

// objectMembersInto reads the members of a JSON object into members, returning
// their names in arrival order (a repeated name keeps its first place and
// its last value).
func objectMembersInto(raw json.RawMessage, members map[string]json.RawMessage) ([]string, error) {
	var order []string
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "%s", err)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, rpc.Errorf(rpc.CodeInvalidParams, "%s", err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, rpc.Errorf(rpc.CodeInvalidParams, "%s", err)
		}
		key, _ := tok.(string)
		if _, seen := members[key]; !seen {
			order = append(order, key)
		}
		members[key] = v
	}
	return order, nil
}

// DecodeBase64Strict decodes standard padded base64 with the texts of the
// reference's decoder ("Invalid symbol 33, offset 0.", "Invalid input
// length: 1", "Invalid padding", "Invalid last symbol 66, offset 2.").
func DecodeBase64Strict(s string) ([]byte, error) {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	for i := 0; i < len(s); i++ {
		if s[i] != '=' && strings.IndexByte(alphabet, s[i]) < 0 {
			return nil, rpc.Errorf(rpc.CodeInvalidParams, "Invalid symbol %d, offset %d.", s[i], i)
		}
	}
	if len(s)%4 == 1 {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "Invalid input length: %d", len(s))
	}
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "Invalid padding")
	}
	return b, nil
}

// AppendHTTPBodyDelta appends the http/request/bodyDelta notification;
// errText is nil but on a failed read.
func AppendHTTPBodyDelta(b, quotedID []byte, seq uint64, data []byte, done bool, errText *string) []byte {
	b = append(b, `{"method":"`+MethodHTTPBodyDelta+`","params":{"requestId":`...)
	b = append(b, quotedID...)
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, `,"deltaBase64":"`...)
	b = base64.StdEncoding.AppendEncode(b, data)
	b = append(b, `","done":`...)
	b = strconv.AppendBool(b, done)
	b = append(b, `,"error":`...)
	if errText == nil {
		b = append(b, "null"...)
	} else {
		q, _ := json.Marshal(*errText)
		b = append(b, q...)
	}
	return append(b, `}}`...)
}

// WriteJSON implements rpc.StreamedResult: the body is base64-encoded into
// the message piecewise, so a buffered body is held once, not three times
// (bytes, base64, frame). The JSON is what encoding/json writes.
func (r HTTPRequestResult) WriteJSON(w io.Writer) error {
	hs := r.Headers
	if hs == nil {
		hs = []HTTPResponseHeader{}
	}
	head, err := json.Marshal(hs)
	if err != nil {
		return err
	}
	b := append([]byte(`{"status":`), strconv.Itoa(r.Status)...)
	b = append(b, `,"headers":`...)
	b = append(b, head...)
	b = append(b, ',')
	if _, err := w.Write(b); err != nil {
		return err
	}
	return Base64Result{Field: "bodyBase64", Data: r.BodyBase64}.writeMember(w)
}
