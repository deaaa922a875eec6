package agenttool

import (
	"sort"
	"sync"
	"time"
)

// FakeClock is a manually advanced Clock for tests. Time moves only when
// Advance is called; timers whose deadline is reached fire during Advance, in
// deadline order. All methods may be called concurrently.
type FakeClock struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*fakeTimer
	changed chan struct{} // closed and replaced whenever timers change
}

var _ Clock = (*FakeClock)(nil)

// NewFakeClock returns a FakeClock whose time starts at start.
func NewFakeClock(start time.Time) *FakeClock {
	return &FakeClock{now: start, changed: make(chan struct{})}
}

// Now returns the fake current time.
func (f *FakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// After returns the channel of a new timer.
func (f *FakeClock) After(d time.Duration) <-chan time.Time { return f.NewTimer(d).C() }

// NewTimer returns a timer that fires when the fake time reaches now+d. A
// timer with d <= 0 fires immediately.
func (f *FakeClock) NewTimer(d time.Duration) Timer {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := &fakeTimer{clock: f, when: f.now.Add(d), c: make(chan time.Time, 1)}
	if d <= 0 {
		t.c <- f.now
		return t
	}
	f.timers = append(f.timers, t)
	f.notifyLocked()
	return t
}

// Advance moves the fake time forward by d and fires every timer that became
// due.
func (f *FakeClock) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	sort.SliceStable(f.timers, func(i, j int) bool { return f.timers[i].when.Before(f.timers[j].when) })
	kept := f.timers[:0]
	for _, t := range f.timers {
		if !t.when.After(f.now) {
			t.c <- t.when
			continue
		}
		kept = append(kept, t)
	}
	clear(f.timers[len(kept):])
	f.timers = kept
	f.notifyLocked()
}

// Pending returns the number of timers that have not fired or been stopped.
func (f *FakeClock) Pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.timers)
}

// BlockUntil waits until at least n timers are pending, or until done is
// closed; it reports whether the condition was met.
func (f *FakeClock) BlockUntil(n int, done <-chan struct{}) bool {
	for {
		f.mu.Lock()
		ok, ch := len(f.timers) >= n, f.changed
		f.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-done:
			return false
		}
	}
}

// NextDeadline returns the earliest pending timer deadline, if any.
func (f *FakeClock) NextDeadline() (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.timers) == 0 {
		return time.Time{}, false
	}
	min := f.timers[0].when
	for _, t := range f.timers[1:] {
		if t.when.Before(min) {
			min = t.when
		}
	}
	return min, true
}

func (f *FakeClock) notifyLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *FakeClock) stop(t *fakeTimer) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, x := range f.timers {
		if x == t {
			f.timers = append(f.timers[:i], f.timers[i+1:]...)
			f.notifyLocked()
			return true
		}
	}
	return false
}

type fakeTimer struct {
	clock *FakeClock
	when  time.Time
	c     chan time.Time
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }
func (t *fakeTimer) Stop() bool          { return t.clock.stop(t) }
