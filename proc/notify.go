package proc

import (
	"encoding/base64"
	"encoding/json"
	"strconv"

	"github.com/codexec/codex/rpc"
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
	b = base64.StdEncoding.AppendEncode(b, data)
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

// frame returns a pooled buffer big enough for a notification carrying n
// payload bytes.
func frame(n int) []byte {
	b := rpc.AcquireFrame()
	if need := base64.StdEncoding.EncodedLen(n) + 160; cap(b) < need {
		rpc.ReleaseFrame(b)
		b = make([]byte, 0, need)
	}
	return b
}
