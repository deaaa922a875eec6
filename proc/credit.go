package proc

import "sync"

// OutputCredit bounds the output that a group of processes (one session,
// so one connection at a time) holds in memory on its way to a consumer.
// A reader takes one credit after its stream became readable and before it
// reads, and gives it back once its OutputFunc returned, that is once the
// chunk was retained and its notification written or dropped. So while the
// consumer does not read, at most Cap chunks (a read buffer and an encoded
// frame each) wait in memory; every other reader waits without a buffer,
// its child blocked on a full pipe. A nil *OutputCredit imposes no bound.
//
// Credits are handed out first come, first served: a released credit goes
// straight to the reader that has waited longest, and a reader that comes
// back from the poller with data (tryAcquire) gets a free credit only when
// nobody is waiting. No reader can barge ahead of the queue, so K streams
// competing for the credits of one connection each get a chunk in turn.
type OutputCredit struct {
	mu      sync.Mutex
	free    int               // credits not held and not promised to a waiter
	waiters []chan<- struct{} // FIFO; each is sent one token when its credit is handed over
	head    int               // waiters[head:] are waiting
}

// DefaultOutputCredits is the number of chunks a session may have in
// flight: enough to keep two cores encoding, small enough that a stalled
// client costs about 2.5 MiB of buffers (256 KiB read + 342 KiB frame each).
const DefaultOutputCredits = 4

// NewOutputCredit returns a bound of n chunks in flight (n >= 1).
func NewOutputCredit(n int) *OutputCredit {
	return &OutputCredit{free: max(n, 1)}
}

// acquire blocks until the caller holds a credit, queueing behind every
// reader already waiting. wake is the caller's own channel with a buffer
// of one, empty on entry and on return; it is reused across calls so that
// waiting allocates nothing. Holders always finish: their OutputFunc
// returns once the notification is written, the connection ends, or the
// session ends.
func (c *OutputCredit) acquire(wake chan struct{}) {
	if c != nil && !c.join(wake) {
		<-wake
	}
}

// join takes a free credit if nobody waits and reports true, or queues
// wake last and reports false: the credit then arrives on wake.
func (c *OutputCredit) join(wake chan<- struct{}) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.free > 0 && c.head == len(c.waiters) {
		c.free--
		return true
	}
	if c.head > 0 && len(c.waiters) == cap(c.waiters) {
		// Full with served waiters at the front: move the queue down
		// rather than grow, so the array stays as long as the longest
		// queue.
		n := copy(c.waiters, c.waiters[c.head:])
		clear(c.waiters[n:])
		c.waiters, c.head = c.waiters[:n], 0
	}
	c.waiters = append(c.waiters, wake)
	return false
}

// tryAcquire takes a credit if one is free and nobody waits for one.
func (c *OutputCredit) tryAcquire() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.free > 0 && c.head == len(c.waiters) {
		c.free--
		return true
	}
	return false
}

// release gives a credit back: to the longest waiting reader if there is
// one, else to the pool.
func (c *OutputCredit) release() {
	if c == nil {
		return
	}
	c.mu.Lock()
	if c.head < len(c.waiters) {
		w := c.waiters[c.head]
		c.waiters[c.head] = nil
		c.head++
		if c.head == len(c.waiters) { // empty: reuse the array from its start
			c.waiters, c.head = c.waiters[:0], 0
		}
		c.mu.Unlock()
		w <- struct{}{} // buffered: never blocks
		return
	}
	c.free++
	c.mu.Unlock()
}

// waiting is the number of readers queued for a credit.
func (c *OutputCredit) waiting() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters) - c.head
}
