package execserver

import (
	"encoding/base64"
	"sync"

	"github.com/codexec/codex/proc"
	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wire"
)

// maxDelta is the largest outputDelta payload, as the reference coalesces
// its reads into deltas of up to 64 KiB (§13.4).
const maxDelta = 64 << 10

// pendingLimit is how much unsent output a streamed stream holds before
// its reader waits for the sender: the backpressure that stalls the child.
const pendingLimit = maxDelta

// execOutput collects or streams the output of one command/exec, applying
// the per-stream cap (unifiedexec.md §13.4). In streaming mode the readers
// only queue bytes, and one sender goroutine turns what is queued into
// deltas: what the child wrote while a delta was being sent goes out as
// one delta, however many reads it took, and the sender never waits for
// more data than is there.
type execOutput struct {
	emit   func(wire.CommandExecOutputDelta) // sends one delta (streaming only)
	id     string
	stream bool
	cap    int64 // negative: none

	mu      sync.Mutex
	cond    *sync.Cond // on mu: queued bytes, room, closing (streaming only)
	outs    [2]capped  // guarded by mu: stdout (and the PTY), stderr
	next    int        // guarded by mu: the stream the sender looks at first
	closing bool       // guarded by mu: close was called
	done    chan struct{}
}

// capped is one stream's kept bytes.
type capped struct {
	kept     int64
	blocks   [][]byte // buffered mode: the kept bytes (see keep)
	buf      []byte   // streaming: the bytes not sent yet
	spare    []byte   // streaming: a sent buffer for reuse
	reported bool     // the cap was reached: nothing more is kept
	owed     bool     // streaming: a capReached delta is still to be sent
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
	o := &execOutput{emit: emit, id: id, stream: stream, cap: limit, done: make(chan struct{})}
	o.cond = sync.NewCond(&o.mu)
	if stream {
		go o.send()
	} else {
		close(o.done)
	}
	return o
}

// add is the proc.OutputFunc: it keeps the first cap bytes of each stream
// and drops the rest, never blocking the child on the cap.
func (o *execOutput) add(s proc.Stream, b []byte) {
	i := 0
	if s == proc.StreamStderr {
		i = 1
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	st := &o.outs[i]
	if st.reported {
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
		return
	}
	if n == 0 && !reached {
		return
	}
	// Waiting here is the backpressure: the reader waits for the sender,
	// the sender for the connection, and the child for the reader.
	for len(st.buf) >= pendingLimit && !o.closing {
		o.cond.Wait()
	}
	st.buf = append(st.buf, b[:n]...)
	st.owed = st.owed || reached
	o.cond.Broadcast()
}

// send is the sender goroutine of a streamed run: it sends what is queued,
// stream by stream in turn, until close and nothing is left.
func (o *execOutput) send() {
	defer close(o.done)
	o.mu.Lock()
	defer o.mu.Unlock()
	for {
		i := o.ready()
		if i < 0 {
			if o.closing {
				return
			}
			o.cond.Wait()
			continue
		}
		st := &o.outs[i]
		data, flag := st.buf, st.owed
		st.buf, st.spare, st.owed = st.spare[:0], nil, false
		o.next = 1 - i
		o.cond.Broadcast() // room for the reader
		o.mu.Unlock()
		o.notify(i, data, flag)
		o.mu.Lock()
		if cap(data) <= 4*pendingLimit {
			st.spare = data[:0]
		}
	}
}

// ready returns a stream with something to send, o.next first; -1 if none.
func (o *execOutput) ready() int {
	for k := range 2 {
		i := (o.next + k) % 2
		if len(o.outs[i].buf) > 0 || o.outs[i].owed {
			return i
		}
	}
	return -1
}

// notify sends data as deltas of at most maxDelta, the last one flagged
// capReached if flag.
func (o *execOutput) notify(i int, data []byte, flag bool) {
	name := wire.StreamStdout
	if i == 1 {
		name = wire.StreamStderr
	}
	for {
		piece := data[:min(len(data), maxDelta)]
		data = data[len(piece):]
		o.emit(wire.CommandExecOutputDelta{ProcessID: o.id, Stream: name, DeltaBase64: base64.StdEncoding.EncodeToString(piece), CapReached: flag && len(data) == 0})
		if len(data) == 0 {
			return
		}
	}
}

// close sends what is still queued and ends the sender; call it once no
// reader can add more (after the process's Close), before the response.
func (o *execOutput) close() {
	o.mu.Lock()
	o.closing = true
	o.cond.Broadcast()
	o.mu.Unlock()
	<-o.done
}

// result is the final response: buffered streams as UTF-8 (U+FFFD for
// each invalid byte), streamed ones "". Call it after close, once no
// reader adds more.
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
// [16 KiB, 4 MiB], so a large output costs its size and no garbage. A block
// ends before a byte that continues a UTF-8 sequence (backing off at most
// 3 bytes), so decoding block by block equals decoding the whole.
func (st *capped) keep(b []byte) {
	for len(b) > 0 {
		if n := len(st.blocks); n > 0 {
			last := st.blocks[n-1]
			cut := min(cap(last)-len(last), len(b))
			for k := 0; k < 3 && cut > 0 && cut < len(b) && b[cut]&0xC0 == 0x80; k++ {
				cut--
			}
			st.blocks[n-1] = append(last, b[:cut]...)
			if b = b[cut:]; len(b) == 0 {
				return
			}
		}
		var size int64
		for _, blk := range st.blocks {
			size += int64(len(blk))
		}
		st.blocks = append(st.blocks, make([]byte, 0, min(max(size, 16<<10), 4<<20)))
	}
}
