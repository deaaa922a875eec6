// Joined sends: messages of several callers that leave in one write when
// they meet behind a write in flight (group commit), without delaying a
// message that finds the connection free.

package rpc

import (
	"context"
	"sync"
)

// joinedSends gathers the messages of SendJoined calls made while a write
// is in flight. At most one group per context gathers at a time.
type joinedSends struct {
	mu   sync.Mutex
	open []*joinGroup // guarded by mu: groups whose first caller waits for the write token
}

// joinGroup is the messages that leave in one write.
type joinGroup struct {
	ctx    context.Context // the first caller's; bounds the group's wait
	frames [][]byte        // appended under joinedSends.mu while the group is open
	pooled [][]byte        // those of frames to return to the frame pool; likewise
	done   chan struct{}   // closed once the group was written, or given up
	err    error           // written before done is closed
}

// SendJoined is SendBatch for messages that may leave together with those
// of other SendJoined calls with the same ctx: a call
// that finds such a group waiting for the write in flight adds its
// messages to it and returns once the group was written (or given up:
// ctx done or the connection ended), with the group's error. A call that
// finds none starts a group and writes it as soon as it holds the write
// token, so a lone message is not delayed. Messages of one call stay
// together and in order; those of one goroutine's successive calls too.
// With pooled, the frames are returned to the frame pool afterwards.
func (c *Conn) SendJoined(ctx context.Context, pooled bool, frames ...[]byte) error {
	j := &c.joined
	j.mu.Lock()
	for _, g := range j.open {
		if g.ctx == ctx {
			g.add(pooled, frames)
			j.mu.Unlock()
			<-g.done
			return g.err
		}
	}
	g := &joinGroup{ctx: ctx, frames: make([][]byte, 0, len(frames)+4), done: make(chan struct{})}
	g.add(pooled, frames)
	j.open = append(j.open, g)
	j.mu.Unlock()
	err := c.write(ctx, func() error {
		j.close(g)
		return c.writeFrames(g.frames)
	})
	j.close(g) // when write gave up without writing
	g.err = err
	for _, f := range g.pooled {
		ReleaseFrame(f)
	}
	close(g.done)
	return err
}

// add appends frames to the group, to be released afterwards if pooled.
func (g *joinGroup) add(pooled bool, frames [][]byte) {
	g.frames = append(g.frames, frames...)
	if pooled {
		g.pooled = append(g.pooled, frames...)
	}
}

// close stops g from gathering more messages. Idempotent.
func (j *joinedSends) close(g *joinGroup) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for i, o := range j.open {
		if o == g {
			j.open = append(j.open[:i], j.open[i+1:]...)
			return
		}
	}
}
