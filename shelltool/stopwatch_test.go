package shelltool

import (
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is a manual Clock: Advance runs the timers that fall due, in
// order, synchronously.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c       *fakeClock
	at      time.Time
	f       func()
	stopped bool
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.stopped
	t.stopped = true
	return was
}

// Advance moves the clock by d, firing due timers.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	for {
		sort.Slice(c.timers, func(i, j int) bool { return c.timers[i].at.Before(c.timers[j].at) })
		var due *fakeTimer
		for _, t := range c.timers {
			if !t.stopped && !t.at.After(end) {
				due = t
				break
			}
		}
		if due == nil {
			break
		}
		due.stopped = true
		c.now = due.at
		c.mu.Unlock()
		due.f()
		c.mu.Lock()
	}
	c.now = end
	c.mu.Unlock()
}

func TestStopwatchFires(t *testing.T) {
	clk := newFakeClock()
	var n atomic.Int32
	sw := NewStopwatch(clk, 10*time.Second, func() { n.Add(1) })
	sw.Start()
	clk.Advance(9999 * time.Millisecond)
	if n.Load() != 0 || sw.Expired() {
		t.Fatal("fired early")
	}
	clk.Advance(time.Millisecond)
	if n.Load() != 1 || !sw.Expired() {
		t.Fatal("did not fire at the limit")
	}
	clk.Advance(time.Hour)
	sw.Stop()
	if n.Load() != 1 {
		t.Fatalf("fired %d times", n.Load())
	}
}

func TestStopwatchZeroFiresAtOnce(t *testing.T) {
	clk := newFakeClock()
	var n atomic.Int32
	sw := NewStopwatch(clk, 0, func() { n.Add(1) })
	sw.Start()
	clk.Advance(0)
	sw.Stop()
	if n.Load() != 1 {
		t.Fatal("timeout 0 did not expire at once")
	}
}

func TestStopwatchPauseDelays(t *testing.T) {
	clk := newFakeClock()
	var n atomic.Int32
	sw := NewStopwatch(clk, 10*time.Second, func() { n.Add(1) })
	sw.Start()
	clk.Advance(4 * time.Second)
	resume := sw.Pause()
	clk.Advance(time.Minute)
	if n.Load() != 0 {
		t.Fatal("fired while paused")
	}
	resume()
	resume() // a second call does nothing
	clk.Advance(5999 * time.Millisecond)
	if n.Load() != 0 {
		t.Fatal("paused time was counted")
	}
	clk.Advance(time.Millisecond)
	if n.Load() != 1 {
		t.Fatal("did not fire after the pause")
	}
	sw.Stop()
}

func TestStopwatchOverlappingPauses(t *testing.T) {
	clk := newFakeClock()
	var n atomic.Int32
	sw := NewStopwatch(clk, 10*time.Second, func() { n.Add(1) })
	sw.Start()
	clk.Advance(2 * time.Second)
	r1 := sw.Pause()
	clk.Advance(time.Second)
	r2 := sw.Pause()
	clk.Advance(time.Second)
	r1() // r2 still pending: the clock stays stopped
	clk.Advance(30 * time.Second)
	if n.Load() != 0 {
		t.Fatal("resumed before the last pause ended")
	}
	r2()
	clk.Advance(8*time.Second - time.Millisecond)
	if n.Load() != 0 {
		t.Fatal("fired early")
	}
	clk.Advance(time.Millisecond)
	if n.Load() != 1 {
		t.Fatal("did not fire")
	}
	sw.Stop()
}

func TestStopwatchStopPreventsExpiry(t *testing.T) {
	clk := newFakeClock()
	var n atomic.Int32
	sw := NewStopwatch(clk, time.Second, func() { n.Add(1) })
	sw.Start()
	sw.Stop()
	clk.Advance(time.Hour)
	if n.Load() != 0 {
		t.Fatal("fired after Stop")
	}
}

func TestStopwatchRealClock(t *testing.T) {
	done := make(chan struct{})
	sw := NewStopwatch(nil, 20*time.Millisecond, func() { close(done) })
	sw.Start()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("real clock did not fire")
	}
	sw.Stop()
}
