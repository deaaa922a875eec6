package rpc

import (
	"math/bits"
	"sync"
)

// Frame buffers come in two pools, so that a request for a large buffer
// never finds a small one first (and the reverse): with one pool, a small
// buffer taken and put back by a caller that needed a large one sat in the
// per-P slot that Get returns first, every large frame was allocated anew
// and the released ones piled up until the next GC.
var (
	framePool    = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}
	bigFramePool sync.Pool // buffers of bigFrameMin to maxPooledFrame bytes, power-of-two sizes
)

const (
	bigFrameMin    = 64 << 10
	maxPooledFrame = 1 << 20
)

// AcquireFrame returns an empty buffer from the frame pool for a message that
// will be sent with Conn.Send(ctx, b, true).
func AcquireFrame() []byte { return (*framePool.Get().(*[]byte))[:0] }

// AcquireFrameSize returns an empty pooled buffer with room for at least n
// bytes, for a message that will be sent with Conn.Send(ctx, b, true).
func AcquireFrameSize(n int) []byte {
	if n <= 4096 {
		return AcquireFrame()
	}
	if n <= maxPooledFrame {
		if p, ok := bigFramePool.Get().(*[]byte); ok && cap(*p) >= n {
			return (*p)[:0]
		}
		// Missing or too small (then it is left to the GC): a new one of the
		// next power-of-two size, so that later requests of about the same
		// size fit it.
		n = max(1<<bits.Len(uint(n-1)), bigFrameMin)
	}
	return make([]byte, 0, n)
}

// ReleaseFrame returns a buffer to the frame pool. Buffers above 1 MiB are
// dropped so that one huge message does not pin memory.
func ReleaseFrame(b []byte) {
	switch c := cap(b); {
	case c > maxPooledFrame:
		return
	case c >= bigFrameMin:
		b = b[:0]
		bigFramePool.Put(&b)
	default:
		b = b[:0]
		framePool.Put(&b)
	}
}
