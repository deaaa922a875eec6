package execserver

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/codexec/codex/proc"
	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wire"
)

// DefaultParkedStdinBytes is the default of Config.StdinParkBytes.
const DefaultParkedStdinBytes = 16 << 20

// parkCost is what a parked write counts against the budget: its bytes, and
// at least a small overhead, so that many tiny writes are bounded too.
func parkCost(n int) int64 { return int64(max(n, 256)) }

// stdinBudget bounds the bytes of one connection's writes that wait for room
// in a stdin queue (their answers parked), and answers them once their bytes
// are queued. The answers are written by a goroutine owned by the
// connection, started when one is scheduled and gone once none is left, so
// that the process goroutines that release a parked write never block on
// the connection.
type stdinBudget struct {
	limit int64 // a write is parked only if nothing waits or it fits under limit
	used  atomic.Int64
	c     *rpc.Conn

	mu      sync.Mutex
	answers []parkedAnswer // guarded by mu: ready to be sent, in order
	sending bool           // guarded by mu: the sender runs
	ended   bool           // guarded by mu: the connection ended (end)
}

type parkedAnswer struct {
	id          rpc.ID
	err         error
	commandExec bool // a command/exec/write: answered {}
}

func newStdinBudget(c *rpc.Conn, limit int64) *stdinBudget {
	return &stdinBudget{limit: limit, c: c}
}

// reserve counts cost against the budget, if it fits. The first parked write
// always fits, whatever its size.
func (b *stdinBudget) reserve(cost int64) bool {
	for {
		cur := b.used.Load()
		if cur > 0 && cur+cost > b.limit {
			return false
		}
		if b.used.CompareAndSwap(cur, cur+cost) {
			return true
		}
	}
}

func (b *stdinBudget) release(cost int64) { b.used.Add(-cost) }

// answer schedules the answer to a parked process/write. It never blocks.
func (b *stdinBudget) answer(id rpc.ID, err error) { b.schedule(parkedAnswer{id: id, err: err}) }

// answerCommandExec schedules the answer to a parked command/exec/write.
func (b *stdinBudget) answerCommandExec(id rpc.ID) {
	b.schedule(parkedAnswer{id: id, commandExec: true})
}

// schedule queues a, starting the sender if it is not running. The
// process goroutines that call it are not the connection's, but the
// sender is started only before end, which runs in the connection's
// AtEnd: until then the connection's goroutines are not all gone, so
// starting one more on its account is safe (rpc.Conn.Go).
func (b *stdinBudget) schedule(a parkedAnswer) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended || b.c.Context().Err() != nil {
		return // the ending connection answered it
	}
	b.answers = append(b.answers, a)
	if !b.sending {
		b.sending = true
		b.c.Go(b.send)
	}
}

// end is called once the connection ended: no sender starts after it.
func (b *stdinBudget) end() {
	b.mu.Lock()
	b.ended = true
	b.mu.Unlock()
}

// send writes the scheduled answers until none is left or the connection
// ends.
func (b *stdinBudget) send(ctx context.Context) {
	for {
		b.mu.Lock()
		answers := b.answers
		b.answers = nil
		if len(answers) == 0 || ctx.Err() != nil {
			b.sending = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		for _, a := range answers {
			if a.commandExec {
				_ = b.c.Respond(a.id, struct{}{}, nil)
				continue
			}
			status := wire.WriteAccepted
			if errors.Is(a.err, proc.ErrStdinClosed) {
				status = wire.WriteStdinClosed
			}
			_ = b.c.Respond(a.id, wire.WriteResult{Status: status}, nil)
		}
	}
}

// forgetWrite drops a write id whose write was refused, so that a retry
// writes.
func (e *entry) forgetWrite(id string) {
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	delete(e.writeIDs, id)
	for i, w := range e.writeOrder {
		if w == id {
			e.writeOrder = append(e.writeOrder[:i], e.writeOrder[i+1:]...)
			break
		}
	}
}
