package wire

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
)

// The process notifications are the hot path of the server (one per output
// read), so they are encoded by hand instead of through encoding/json
// (docs/benchmarking.md §4). The golden tests hold these encoders to the same bytes
// as encoding/json of the param types below. quotedID is the process id
// already encoded as a JSON string (QuoteID).

// OutputParams is the params of the process/output notification; Chunk is
// the standard base64 of the bytes read.
type OutputParams struct {
	ProcessID string `json:"processId"`
	Seq       uint64 `json:"seq"`
	Stream    string `json:"stream"`
	Chunk     Bytes  `json:"chunk"`
}

// ExitedParams is the params of the process/exited notification.
type ExitedParams struct {
	ProcessID     string `json:"processId"`
	Seq           uint64 `json:"seq"`
	ExitCode      int    `json:"exitCode"`
	SandboxDenied bool   `json:"sandboxDenied"`
}

// ClosedParams is the params of the process/closed notification.
type ClosedParams struct {
	ProcessID string `json:"processId"`
	Seq       uint64 `json:"seq"`
}

// Base64Appender appends the standard base64 encoding of src to dst and
// returns the extended slice. The server passes a SIMD encoder; nil means
// AppendBase64 (encoding/base64).
type Base64Appender func(dst, src []byte) []byte

// AppendBase64 appends the standard base64 encoding of src to dst.
func AppendBase64(dst, src []byte) []byte { return base64.StdEncoding.AppendEncode(dst, src) }

// OutputFrameSize is the buffer size that holds a process/output
// notification carrying n payload bytes and an id of up to 100 bytes.
func OutputFrameSize(n int) int { return base64.StdEncoding.EncodedLen(n) + 160 }

// QuoteID returns id encoded as a JSON string, the form the Append
// functions take.
func QuoteID(id string) []byte {
	b, _ := json.Marshal(id)
	return b
}

// AppendOutputNotification appends the process/output notification for data
// read from stream at seq, encoding data with enc (nil: AppendBase64).
func AppendOutputNotification(b, quotedID []byte, seq uint64, stream string, data []byte, enc Base64Appender) []byte {
	if enc == nil {
		enc = AppendBase64
	}
	b = append(b, `{"method":"`+MethodProcessOutput+`","params":{"processId":`...)
	b = append(b, quotedID...)
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, `,"stream":"`...)
	b = append(b, stream...)
	b = append(b, `","chunk":"`...)
	b = enc(b, data)
	return append(b, `"}}`...)
}

// AppendExitedNotification appends the process/exited notification.
func AppendExitedNotification(b, quotedID []byte, seq uint64, code int, denied bool) []byte {
	b = append(b, `{"method":"`+MethodProcessExited+`","params":{"processId":`...)
	b = append(b, quotedID...)
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, `,"exitCode":`...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, `,"sandboxDenied":`...)
	b = strconv.AppendBool(b, denied)
	return append(b, `}}`...)
}

// AppendClosedNotification appends the process/closed notification.
func AppendClosedNotification(b, quotedID []byte, seq uint64) []byte {
	b = append(b, `{"method":"`+MethodProcessClosed+`","params":{"processId":`...)
	b = append(b, quotedID...)
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, seq, 10)
	return append(b, `}}`...)
}
