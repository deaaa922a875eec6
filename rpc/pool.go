package rpc

import "sync"

var framePool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// AcquireFrame returns an empty buffer from the frame pool for a message that
// will be sent with Conn.Send(ctx, b, true).
func AcquireFrame() []byte { return (*framePool.Get().(*[]byte))[:0] }

// ReleaseFrame returns a buffer to the frame pool. Buffers above 1 MiB are
// dropped so that one huge message does not pin memory.
func ReleaseFrame(b []byte) {
	if cap(b) > 1<<20 {
		return
	}
	b = b[:0]
	framePool.Put(&b)
}
