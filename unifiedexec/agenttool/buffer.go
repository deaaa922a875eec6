package agenttool

import "strconv"

// OutputMaxBytes is the cap of every per-process HeadTailBuffer (docs/client.md §2).
const OutputMaxBytes = 1 << 20

// OutputMaxTokens is the token budget for sandbox-denial snippets (docs/client.md §2).
const OutputMaxTokens = OutputMaxBytes / 4

// HeadTailBuffer is a capped byte buffer that keeps a stable prefix (the
// head) and a rolling suffix (the tail), counting the bytes it dropped in
// between (docs/client.md §6). The head budget is max/2 (floor) and the tail
// budget is the rest.
//
// A HeadTailBuffer is not safe for concurrent use; callers lock around it.
// Its zero value has a cap of 0 and counts every pushed byte as omitted; use
// NewHeadTailBuffer.
type HeadTailBuffer struct {
	max, headBudget, tailBudget int
	head, tail                  []byte
	omitted                     int64
}

// NewHeadTailBuffer returns a buffer capped at limit bytes. A negative limit is
// treated as 0.
func NewHeadTailBuffer(limit int) *HeadTailBuffer {
	limit = max(limit, 0)
	head := limit / 2
	return &HeadTailBuffer{max: limit, headBudget: head, tailBudget: limit - head}
}

// NewDefaultHeadTailBuffer returns a buffer capped at OutputMaxBytes.
func NewDefaultHeadTailBuffer() *HeadTailBuffer { return NewHeadTailBuffer(OutputMaxBytes) }

// Push appends chunk. Empty chunks are ignored. The head fills first; the
// remainder goes to the tail, whose oldest bytes are dropped (and counted as
// omitted) once it exceeds its budget.
func (b *HeadTailBuffer) Push(chunk []byte) {
	if len(chunk) == 0 {
		return
	}
	if b.max == 0 {
		b.omitted += int64(len(chunk))
		return
	}
	if room := b.headBudget - len(b.head); room > 0 {
		n := min(room, len(chunk))
		b.head = append(b.head, chunk[:n]...)
		chunk = chunk[n:]
	}
	if len(chunk) == 0 {
		return
	}
	if len(chunk) >= b.tailBudget {
		b.omitted += int64(len(b.tail)) + int64(len(chunk)-b.tailBudget)
		b.tail = append(b.tail[:0], chunk[len(chunk)-b.tailBudget:]...)
		return
	}
	b.tail = append(b.tail, chunk...)
	if excess := len(b.tail) - b.tailBudget; excess > 0 {
		b.omitted += int64(excess)
		// Reslicing keeps this amortised O(len(chunk)): append reallocates
		// with only the live bytes once the capacity is exhausted.
		b.tail = b.tail[excess:]
	}
}

// Retained returns the number of bytes held (head plus tail).
func (b *HeadTailBuffer) Retained() int { return len(b.head) + len(b.tail) }

// Omitted returns the number of bytes dropped since the last drain.
func (b *HeadTailBuffer) Omitted() int64 { return b.omitted }

// SnapshotChunks returns copies of [head, tail], leaving out empty ones.
func (b *HeadTailBuffer) SnapshotChunks() [][]byte {
	var out [][]byte
	for _, p := range [][]byte{b.head, b.tail} {
		if len(p) > 0 {
			out = append(out, append([]byte(nil), p...))
		}
	}
	return out
}

// Bytes returns a copy of head + tail.
func (b *HeadTailBuffer) Bytes() []byte {
	out := make([]byte, 0, b.Retained())
	out = append(out, b.head...)
	return append(out, b.tail...)
}

// BytesWithOmissionMarker returns head + "\n... N bytes omitted ...\n" + tail
// when bytes were omitted, and Bytes otherwise.
func (b *HeadTailBuffer) BytesWithOmissionMarker() []byte {
	if b.omitted == 0 {
		return b.Bytes()
	}
	out := make([]byte, 0, b.Retained()+40)
	out = append(out, b.head...)
	out = append(out, "\n... "...)
	out = strconv.AppendInt(out, b.omitted, 10)
	out = append(out, " bytes omitted ...\n"...)
	return append(out, b.tail...)
}

// DrainChunks returns the non-empty chunks of [head, tail] and resets the
// buffer, including the omitted counter.
func (b *HeadTailBuffer) DrainChunks() [][]byte {
	var out [][]byte
	for _, p := range [][]byte{b.head, b.tail} {
		if len(p) > 0 {
			out = append(out, p)
		}
	}
	b.head, b.tail, b.omitted = nil, nil, 0
	return out
}
