//go:build linux

// The spare leaf: one cgroup leaf, limits written, made in the background
// after a spawn, so the next spawn forks into it at once instead of paying
// for the mkdirs and control-file writes on its own start path.

package proc

import "sync"

// spareLeaf holds at most one leaf made ahead of time and the goroutine
// making it.
type spareLeaf struct {
	mu      sync.Mutex
	slot    *cgroupSlot // ready for the next prepare; nil if none
	filling bool        // a refill goroutine runs
	closed  bool        // TreeKiller.Close began: no more refills
	wg      sync.WaitGroup
}

// takeSpare hands out the spare leaf, if one is ready.
func (t *TreeKiller) takeSpare() (cgroupSlot, bool) {
	t.spare.mu.Lock()
	defer t.spare.mu.Unlock()
	if t.spare.slot == nil {
		return cgroupSlot{fd: -1}, false
	}
	s := *t.spare.slot
	t.spare.slot = nil
	return s, true
}

// refillSpare starts making the next spare leaf, unless one is ready or
// being made, or the TreeKiller is closing. Called after a fork, so that
// the mkdirs do not contend with the fork for the cgroup lock.
func (t *TreeKiller) refillSpare() {
	if t == nil || t.mode != modeCgroup {
		return
	}
	sp := &t.spare
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.slot != nil || sp.filling || sp.closed {
		return
	}
	sp.filling = true
	sp.wg.Add(1)
	go func() {
		defer sp.wg.Done()
		s, err := t.makeLeaf()
		sp.mu.Lock()
		defer sp.mu.Unlock()
		sp.filling = false
		switch {
		case err != nil:
			// The next prepare makes its leaf itself and reports the error.
		case sp.closed:
			s.discard(t)
		default:
			sp.slot = &s
		}
	}()
}

// closeSpare stops the refills and removes the spare leaf. Called by
// Close before it removes the owned directory.
func (t *TreeKiller) closeSpare() {
	sp := &t.spare
	sp.mu.Lock()
	sp.closed = true
	s := sp.slot
	sp.slot = nil
	sp.mu.Unlock()
	sp.wg.Wait()
	if s != nil {
		s.discard(t)
	}
}
