package execserver

import (
	"encoding/base64"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/codexec/codex/proc"
	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wire"
)

// maxDelta is the largest outputDelta payload, as the reference coalesces
// its reads into deltas of up to 64 KiB (docs/protocol.md §12.4).
const maxDelta = 64 << 10

// execOutput collects or streams the output of one command/exec, applying
// the per-stream cap (docs/protocol.md §12.4).
type execOutput struct {
	c      *rpc.Conn
	id     string
	stream bool
	cap    int64 // negative: none

	mu   sync.Mutex
	outs [2]capped // guarded by mu: stdout (and the PTY), stderr
}

// capped is one stream's kept bytes.
type capped struct {
	kept     int64
	buf      []byte // buffered mode only
	reported bool   // capReached was sent
}

func newExecOutput(c *rpc.Conn, id string, stream bool, limit int64) *execOutput {
	return &execOutput{c: c, id: id, stream: stream, cap: limit}
}

// add is the proc.OutputFunc: it keeps the first cap bytes of each stream
// and drops the rest, never blocking the child on the cap.
func (o *execOutput) add(s proc.Stream, b []byte) {
	i, name := 0, wire.StreamStdout
	if s == proc.StreamStderr {
		i, name = 1, wire.StreamStderr
	}
	o.mu.Lock()
	st := &o.outs[i]
	if st.reported {
		o.mu.Unlock()
		return
	}
	n := int64(len(b))
	if o.cap >= 0 {
		n = min(n, o.cap-st.kept)
	}
	st.kept += n
	reached := o.cap >= 0 && st.kept == o.cap
	if !o.stream {
		st.buf = append(st.buf, b[:n]...)
		st.reported = reached
		o.mu.Unlock()
		return
	}
	if n == 0 && !reached {
		o.mu.Unlock()
		return
	}
	st.reported = reached
	o.mu.Unlock()
	// Blocking here is the backpressure: the reader waits for the
	// connection, and the child for the reader. One stream has one reader,
	// so its deltas keep their order.
	kept := b[:n]
	for {
		piece := kept[:min(len(kept), maxDelta)]
		kept = kept[len(piece):]
		delta := wire.CommandExecOutputDelta{ProcessID: o.id, Stream: name, DeltaBase64: base64.StdEncoding.EncodeToString(piece), CapReached: reached && len(kept) == 0}
		_ = o.c.Notify(o.c.Context(), wire.MethodCommandExecOutput, delta)
		if len(kept) == 0 {
			return
		}
	}
}

// result is the final response: buffered streams decoded as UTF-8 (U+FFFD
// for each invalid byte), streamed ones "".
func (o *execOutput) result(code int) wire.CommandExecResult {
	o.mu.Lock()
	defer o.mu.Unlock()
	return wire.CommandExecResult{ExitCode: code, Stdout: validUTF8(o.outs[0].buf), Stderr: validUTF8(o.outs[1].buf)}
}

func validUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + 8)
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			sb.WriteRune(utf8.RuneError)
		} else {
			sb.Write(b[:size])
		}
		b = b[size:]
	}
	return sb.String()
}
