package execserver

import (
	"encoding/base64"
	"sync"
	"sync/atomic"

	"github.com/codexec/codex/metrics"
	"github.com/codexec/codex/proc"
	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wire"
)

// maxDelta is the largest outputDelta payload, as the reference coalesces
// its reads into deltas of up to 64 KiB (docs/protocol.md §12.4).
const maxDelta = 64 << 10

// execOutput collects or streams the output of one command/exec, applying
// the per-stream cap (docs/protocol.md §12.4). A streamed read becomes one
// delta (split at maxDelta) sent on the reader's goroutine. Small writes
// are merged without waiting for more data: a read takes everything the
// pipe holds (up to proc's 256 KiB buffer; a PTY's 4 KiB pieces are drained
// together), and while a delta is being sent nobody reads, so what the
// child writes meanwhile comes out of the next read as one delta.
type execOutput struct {
	emit    func(wire.CommandExecOutputDelta) // sends one delta (streaming only)
	metrics *metrics.Metrics                  // counts the bytes read; nil: not counted
	read    atomic.Int64                      // bytes read, kept or not
	id      string
	stream  bool
	cap     int64 // negative: none

	mu   sync.Mutex
	outs [2]capped // guarded by mu: stdout (and the PTY), stderr
}

// capped is one stream's kept bytes.
type capped struct {
	kept     int64
	blocks   [][]byte // buffered mode: the kept bytes (see keep)
	reported bool     // the cap was reached: nothing more is kept
	cut      capCut   // buffered mode: a character the cap may have cut
	minBlock int      // the smallest block; 0: 16 KiB (tests make it small)
}

// newExecOutput collects (or, with stream, sends on c) one run's output
// under the cap limit (negative: none).
func newExecOutput(c *rpc.Conn, id string, stream bool, limit int64) *execOutput {
	emit := func(d wire.CommandExecOutputDelta) { _ = c.Notify(c.Context(), wire.MethodCommandExecOutput, d) }
	return newExecOutputTo(emit, id, stream, limit)
}

// newExecOutputTo is newExecOutput with the delta sender given; a failed
// send (the connection is gone) is the sender's to drop.
func newExecOutputTo(emit func(wire.CommandExecOutputDelta), id string, stream bool, limit int64) *execOutput {
	return &execOutput{emit: emit, id: id, stream: stream, cap: limit}
}

// add is the proc.OutputFunc: it keeps the first cap bytes of each stream
// and drops the rest, never blocking the child on the cap.
func (o *execOutput) add(s proc.Stream, b []byte) {
	o.read.Add(int64(len(b)))
	o.metrics.Output(len(b))
	i, name := 0, wire.StreamStdout
	if s == proc.StreamStderr {
		i, name = 1, wire.StreamStderr
	}
	o.mu.Lock()
	st := &o.outs[i]
	if st.reported {
		st.settleCut(b) // buffered mode: what follows the cap
		o.mu.Unlock()
		return
	}
	n := int64(len(b))
	if o.cap >= 0 {
		n = min(n, o.cap-st.kept)
	}
	st.kept += n
	reached := o.cap >= 0 && st.kept == o.cap
	st.reported = reached
	if !o.stream {
		st.keep(b[:n])
		if reached {
			st.cut.open(st.blocks)
			st.settleCut(b[n:])
		}
		o.mu.Unlock()
		return
	}
	o.mu.Unlock()
	if n == 0 && !reached {
		return
	}
	// Blocking here is the backpressure: the reader waits for the
	// connection, and the child for the reader. One stream has one reader,
	// so its deltas keep their order.
	kept := b[:n]
	for {
		piece := kept[:min(len(kept), maxDelta)]
		kept = kept[len(piece):]
		o.emit(wire.CommandExecOutputDelta{ProcessID: o.id, Stream: name, DeltaBase64: base64.StdEncoding.EncodeToString(piece), CapReached: reached && len(kept) == 0})
		if len(kept) == 0 {
			return
		}
	}
}

// result is the final response: buffered streams as UTF-8 (U+FFFD for
// each invalid byte), streamed ones "". Call it once no reader adds more
// (after the process's Close).
func (o *execOutput) result(code int) execResult {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.stream {
		return execResult{code: code}
	}
	return execResult{code: code, stdout: o.outs[0].blocks, stderr: o.outs[1].blocks}
}

// keep appends b to the kept blocks. A full block is never copied into a
// larger one: a new block follows, as large as what is kept so far within
// [16 KiB, 4 MiB], so a large output costs its size and no garbage. Blocks
// end anywhere, inside a character too: the result decodes them as one
// text (appendJSONBlocks).
func (st *capped) keep(b []byte) {
	for len(b) > 0 {
		if n := len(st.blocks); n > 0 {
			last := st.blocks[n-1]
			k := min(cap(last)-len(last), len(b))
			st.blocks[n-1] = append(last, b[:k]...)
			if b = b[k:]; len(b) == 0 {
				return
			}
		}
		var size int64
		for _, blk := range st.blocks {
			size += int64(len(blk))
		}
		smallest := int64(16 << 10)
		if st.minBlock > 0 {
			smallest = int64(st.minBlock)
		}
		st.blocks = append(st.blocks, make([]byte, 0, min(max(size, smallest), 4<<20)))
	}
}
