// The hand-off of a request from the read loop to the handler goroutine
// on transports whose reads block an OS thread.

package rpc

import "runtime"

// blockingReader is implemented by framers whose Read blocks the calling
// OS thread in a system call rather than parking the goroutine in the
// netpoller (stdin is a blocking descriptor shared with the parent, so it
// is read that way).
type blockingReader interface {
	blocksThread() bool
}

// blocksThread reports true: the stdio framer reads its reader directly,
// and stdin is not registered with the netpoller.
func (f *stdioFramer) blocksThread() bool { return true }

// yieldToHandler lets the handler goroutine, just woken by a direct
// hand-off, run on this thread at once. Otherwise it waits in this P's
// queue while the read loop blocks the thread in its next read, until
// another thread is woken to take it over: 10–20 µs per request on a busy
// host. The read loop goes to the global queue meanwhile; the order of
// requests is unchanged, as they are already in c.inq.
func (c *Conn) yieldToHandler() {
	if c.blocking && len(c.inq) == 0 {
		runtime.Gosched()
	}
}
