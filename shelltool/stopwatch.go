package shelltool

import (
	"sync"
	"time"
)

// Clock is the time source of a Stopwatch: the real clock (RealClock) or a
// fake one in tests.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed, unless the
	// returned timer is stopped first.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc.
type Timer interface {
	// Stop prevents the call; it reports false when f already started.
	Stop() bool
}

// RealClock is the system clock.
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// AfterFunc is time.AfterFunc.
func (RealClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// Stopwatch measures a call's running time against its limit
// (docs/shell-tool.md §3.4). Time spent paused does not count; pauses
// may overlap and the clock resumes when the last one ends. When the
// running time reaches the limit, the stopwatch calls expire once.
//
// Create it with NewStopwatch and Start it; Stop ends it and waits for a
// running expire. All methods are safe for concurrent use; expire runs on
// a goroutine of the clock and must not call back into the stopwatch.
type Stopwatch struct {
	clock  Clock
	limit  time.Duration
	expire func()

	mu      sync.Mutex
	started bool
	stopped bool
	fired   bool
	pauses  int           // guarded by mu: pauses in progress
	elapsed time.Duration // guarded by mu: running time before since
	since   time.Time     // guarded by mu: start of the current run (pauses == 0)
	gen     int           // guarded by mu: bumped to disarm a timer that already fired
	timer   Timer         // guarded by mu: the armed timer, nil when none
	wg      sync.WaitGroup
}

// NewStopwatch returns a stopwatch that calls expire when limit of running
// time has passed. A nil clock is RealClock.
func NewStopwatch(clock Clock, limit time.Duration, expire func()) *Stopwatch {
	if clock == nil {
		clock = RealClock{}
	}
	return &Stopwatch{clock: clock, limit: limit, expire: expire}
}

// Start starts the clock (unless a pause is already in progress). A
// second Start does nothing.
func (s *Stopwatch) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.stopped {
		return
	}
	s.started = true
	if s.pauses == 0 {
		s.since = s.clock.Now()
		s.arm()
	}
}

// Pause stops the clock until the returned resume is called (once; later
// calls do nothing).
func (s *Stopwatch) Pause() (resume func()) {
	s.mu.Lock()
	if s.pauses == 0 && s.started && !s.stopped {
		s.elapsed += s.clock.Now().Sub(s.since)
		s.disarm()
	}
	s.pauses++
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.pauses--
			if s.pauses == 0 && s.started && !s.stopped {
				s.since = s.clock.Now()
				s.arm()
			}
		})
	}
}

// Expired reports whether the limit was reached.
func (s *Stopwatch) Expired() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fired
}

// Stop ends the stopwatch: expire will not be called after Stop returns.
func (s *Stopwatch) Stop() {
	s.mu.Lock()
	s.stopped = true
	s.disarm()
	s.mu.Unlock()
	s.wg.Wait()
}

// arm sets a timer for the time left. Called with mu held while running.
func (s *Stopwatch) arm() {
	if s.fired {
		return
	}
	s.gen++
	gen := s.gen
	s.wg.Add(1)
	s.timer = s.clock.AfterFunc(max(s.limit-s.elapsed, 0), func() {
		defer s.wg.Done()
		s.fire(gen)
	})
}

// disarm stops the armed timer. Called with mu held.
func (s *Stopwatch) disarm() {
	s.gen++
	if s.timer != nil && s.timer.Stop() {
		s.wg.Done()
	}
	s.timer = nil
}

// fire calls expire if the timer of generation gen is still the armed one.
func (s *Stopwatch) fire(gen int) {
	s.mu.Lock()
	if gen != s.gen || s.fired || s.stopped || s.pauses > 0 {
		s.mu.Unlock()
		return
	}
	s.fired = true
	s.timer = nil
	s.mu.Unlock()
	s.expire()
}
