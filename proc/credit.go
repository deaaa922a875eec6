package proc

// OutputCredit bounds the output that a group of processes (one session,
// so one connection at a time) holds in memory on its way to a consumer.
// A reader takes one credit after its stream became readable and before it
// reads, and gives it back once its OutputFunc returned, that is once the
// chunk was retained and its notification written or dropped. So while the
// consumer does not read, at most Cap chunks (a read buffer and an encoded
// frame each) wait in memory; every other reader waits without a buffer,
// its child blocked on a full pipe. A nil *OutputCredit imposes no bound.
type OutputCredit struct {
	sem chan struct{}
}

// DefaultOutputCredits is the number of chunks a session may have in
// flight: enough to keep two cores encoding, small enough that a stalled
// client costs about 2.5 MiB of buffers (256 KiB read + 342 KiB frame each).
const DefaultOutputCredits = 4

// NewOutputCredit returns a bound of n chunks in flight (n >= 1).
func NewOutputCredit(n int) *OutputCredit {
	return &OutputCredit{sem: make(chan struct{}, max(n, 1))}
}

// acquire blocks until a credit is free. Holders always finish: their
// OutputFunc returns once the notification is written, the connection
// ends, or the session ends.
func (c *OutputCredit) acquire() {
	if c != nil {
		c.sem <- struct{}{}
	}
}

// tryAcquire takes a credit if one is free.
func (c *OutputCredit) tryAcquire() bool {
	select {
	case c.sem <- struct{}{}:
		return true
	default:
		return false
	}
}

// release gives a credit back.
func (c *OutputCredit) release() {
	if c != nil {
		<-c.sem
	}
}
