package proc

import (
	"encoding/base64"
	"encoding/json"
	"strconv"

	"github.com/codexec/codex/rpc"
	fastb64 "github.com/segmentio/asm/base64"
)

// The process notifications are the hot path of the server (one per output
// read), so they are encoded by hand into pooled buffers instead of through
// encoding/json (benchmarks.md §4). quotedID is the process id already
// encoded as a JSON string.

func quoteID(id string) []byte {
	b, _ := json.Marshal(id)
	return b
}

func appendOutputNotification(b, quotedID []byte, seq uint64, s Stream, data []byte) []byte {
	b = append(b, `{"method":"process/output","params":{"processId":`...)
	b = append(b, quotedID...)
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, `,"stream":"`...)
	b = append(b, s.String()...)
	b = append(b, `","chunk":"`...)
	b = appendBase64(b, data)
	return append(b, `"}}`...)
}

func appendExitedNotification(b, quotedID []byte, seq uint64, code int, denied bool) []byte {
	b = append(b, `{"method":"process/exited","params":{"processId":`...)
	b = append(b, quotedID...)
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, `,"exitCode":`...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, `,"sandboxDenied":`...)
	b = strconv.AppendBool(b, denied)
	return append(b, `}}`...)
}

func appendClosedNotification(b, quotedID []byte, seq uint64) []byte {
	b = append(b, `{"method":"process/closed","params":{"processId":`...)
	b = append(b, quotedID...)
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, seq, 10)
	return append(b, `}}`...)
}

// appendBase64 appends the standard base64 of data to b. It uses the SIMD
// encoder of segmentio/asm, about ten times faster than encoding/base64 on
// AVX2 machines: encoding is most of the CPU time of a pipe stream.
func appendBase64(b, data []byte) []byte {
	n := fastb64.StdEncoding.EncodedLen(len(data))
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), len(b)+n+16)
		copy(nb, b)
		b = nb
	}
	fastb64.StdEncoding.Encode(b[len(b):len(b)+n], data)
	return b[:len(b)+n]
}

// frame returns a pooled buffer big enough for a notification carrying n
// payload bytes.
func frame(n int) []byte {
	return rpc.AcquireFrameSize(base64.StdEncoding.EncodedLen(n) + 160)
}
