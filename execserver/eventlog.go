package execserver

import (
	"sync"

	"github.com/codexec/codex/proc"
)

// Limits on the output retained per process for process/read
// (docs/protocol.md §7.6). The byte cap is server configuration.
const (
	DefaultRetainedBytes  = 1 << 20
	DefaultRetainedChunks = 50_000
)

// chunk records one retained output read; its bytes are in the ring.
type chunk struct {
	seq    uint64
	stream proc.Stream
	off    uint64 // absolute ring offset of its first byte
	n      int
}

// outChunk is a chunk copied out of the log for a read result.
type outChunk struct {
	seq    uint64
	stream proc.Stream
	data   []byte
}

// eventLog is the per-process sequence of events (output chunks, exit,
// close) with its seq counter and the bounded FIFO of retained output. The
// oldest chunks are evicted while the total is above maxBytes or the count
// above maxChunks; evictions are counted, never silent.
//
// All fields are guarded by mu. wake is closed and replaced on every change,
// which is how waiting readers are woken (a broadcast, not a shared channel
// of values).
type eventLog struct {
	mu        sync.Mutex
	maxBytes  int
	maxChunks int

	next         uint64  // next unassigned seq; starts at 1
	chunks       []chunk // retained output, oldest first, from index head
	head         int
	ring         byteRing // the retained bytes
	evictedBytes uint64   // bytes evicted since start
	lastEvicted  uint64   // seq of the newest evicted chunk, 0 if none

	exited        bool
	exitCode      int
	closed        bool
	sandboxDenied bool

	wake chan struct{}
}

func newEventLog(maxBytes, maxChunks int) *eventLog {
	if maxBytes <= 0 {
		maxBytes = DefaultRetainedBytes
	}
	if maxChunks <= 0 {
		maxChunks = DefaultRetainedChunks
	}
	return &eventLog{maxBytes: maxBytes, maxChunks: maxChunks, next: 1, wake: make(chan struct{})}
}

// broadcast wakes every waiter. mu must be held.
func (l *eventLog) broadcast() {
	close(l.wake)
	l.wake = make(chan struct{})
}

// appendOutput assigns the next seq to an output chunk and retains a copy
// of it, evicting the oldest chunks first so that at most maxBytes (or the
// one chunk, if it is larger) and maxChunks stay retained. data is not kept.
func (l *eventLog) appendOutput(s proc.Stream, data []byte) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	seq := l.next
	l.next++
	limit := max(l.maxBytes, len(data))
	for l.head < len(l.chunks) && (l.ring.len()+len(data) > limit || len(l.chunks)-l.head >= l.maxChunks) {
		old := &l.chunks[l.head]
		l.evictedBytes += uint64(old.n)
		l.lastEvicted = old.seq
		l.ring.drop(old.off + uint64(old.n))
		*old = chunk{}
		l.head++
	}
	if l.head > 64 && l.head*2 >= len(l.chunks) {
		n := copy(l.chunks, l.chunks[l.head:])
		clear(l.chunks[n:])
		l.chunks = l.chunks[:n]
		l.head = 0
	}
	off := l.ring.append(data)
	l.ring.trimSpare()
	l.chunks = append(l.chunks, chunk{seq: seq, stream: s, off: off, n: len(data)})
	l.broadcast()
	return seq
}

// markExited records the exit and assigns its seq.
func (l *eventLog) markExited(code int, denied bool) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	seq := l.next
	l.next++
	l.exited, l.exitCode, l.sandboxDenied = true, code, denied
	l.broadcast()
	return seq
}

// markClosed records the close and assigns its seq.
func (l *eventLog) markClosed() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	seq := l.next
	l.next++
	l.closed = true
	l.broadcast()
	return seq
}

// retainedText returns copies of the retained output split by stream, for
// the sandbox denial heuristic.
func (l *eventLog) retainedText() (stdout, stderr []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.chunks[l.head:] {
		if c.stream == proc.StreamStderr {
			stderr = l.ring.read(stderr, c.off, c.n)
		} else {
			stdout = l.ring.read(stdout, c.off, c.n)
		}
	}
	return stdout, stderr
}

// readResult is the outcome of a read (docs/protocol.md §6.6).
type readResult struct {
	Chunks           []outChunk
	NextSeq          uint64
	Exited           bool
	ExitCode         *int
	Closed           bool
	SandboxDenied    bool
	Truncated        bool
	FirstRetainedSeq *uint64
	EvictedBytes     uint64
}

// read collects the chunks after afterSeq within the byte budget (maxBytes <
// 0 means unlimited) and reports whether the read may return now, and the
// channel to wait on otherwise.
func (l *eventLog) read(afterSeq uint64, maxBytes int64) (readResult, bool, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var r readResult
	live := l.chunks[l.head:]
	// Binary search for the first chunk with seq > afterSeq.
	lo, hi := 0, len(live)
	for lo < hi {
		m := (lo + hi) / 2
		if live[m].seq <= afterSeq {
			lo = m + 1
		} else {
			hi = m
		}
	}
	var total int64
	for _, c := range live[lo:] {
		n := int64(c.n)
		if len(r.Chunks) > 0 && maxBytes >= 0 && total+n > maxBytes {
			break
		}
		r.Chunks = append(r.Chunks, outChunk{seq: c.seq, stream: c.stream, data: l.ring.read(make([]byte, 0, c.n), c.off, c.n)})
		total += n
		if maxBytes >= 0 && total >= maxBytes {
			break
		}
	}
	r.NextSeq = l.next
	if maxBytes >= 0 && len(r.Chunks) > 0 {
		r.NextSeq = r.Chunks[len(r.Chunks)-1].seq + 1
	}
	r.Exited, r.Closed, r.SandboxDenied = l.exited, l.closed, l.sandboxDenied
	if l.exited {
		code := l.exitCode
		r.ExitCode = &code
	}
	r.Truncated = l.lastEvicted > afterSeq
	if len(live) > 0 {
		first := live[0].seq
		r.FirstRetainedSeq = &first
	}
	r.EvictedBytes = l.evictedBytes
	return r, l.readyLocked(afterSeq), l.wake
}

// ready reports whether a read after afterSeq may return now, without
// copying anything, and the channel to wait on otherwise. Once true it
// stays true: the newest chunk is never evicted and exit and close stay.
func (l *eventLog) ready(afterSeq uint64) (bool, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.readyLocked(afterSeq), l.wake
}

// readyLocked is ready with l.mu held: a chunk after afterSeq is
// retained, the process closed, or its exit lies beyond afterSeq.
func (l *eventLog) readyLocked(afterSeq uint64) bool {
	newer := len(l.chunks) > l.head && l.chunks[len(l.chunks)-1].seq > afterSeq
	return newer || l.closed || (l.exited && afterSeq < l.next-1)
}
