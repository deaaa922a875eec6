package proc

import (
	"runtime"
	"sync"
	"testing"
)

// queueWaiter starts a reader that waits for a credit of c, then reports
// id on got, and waits until c holds want waiters, so that readers queue
// in the order they were started.
func queueWaiter(t *testing.T, wg *sync.WaitGroup, c *OutputCredit, id, want int, got chan<- int, hold <-chan struct{}) {
	t.Helper()
	wg.Add(1)
	go func() {
		defer wg.Done()
		wake := make(chan struct{}, 1)
		c.acquire(wake)
		got <- id
		<-hold
		c.release()
	}()
	for c.waiting() != want {
		runtime.Gosched()
	}
}

// TestOutputCreditFIFO: readers get credits in the order they queued for
// them, whatever order the runtime wakes them in.
func TestOutputCreditFIFO(t *testing.T) {
	const n = 20
	c := NewOutputCredit(1)
	if !c.tryAcquire() {
		t.Fatal("a fresh credit of 1 is not free")
	}
	got := make(chan int, n)
	hold := make(chan struct{})
	close(hold) // each waiter passes its credit on at once
	var wg sync.WaitGroup
	for i := range n {
		queueWaiter(t, &wg, c, i, i+1, got, hold)
	}
	c.release()
	for i := range n {
		if id := <-got; id != i {
			t.Fatalf("credit %d went to reader %d, want %d (queued in order 0..%d)", i, id, i, n-1)
		}
	}
	wg.Wait()
	if c.waiting() != 0 || !c.tryAcquire() {
		t.Fatalf("after the queue drained: %d waiting, credit not free", c.waiting())
	}
}

// TestOutputCreditNoBarging: a released credit is promised to the oldest
// waiter before that waiter even runs; a reader coming back from the
// poller with data (tryAcquire) cannot take it and must queue behind.
func TestOutputCreditNoBarging(t *testing.T) {
	c := NewOutputCredit(2)
	if !c.tryAcquire() || !c.tryAcquire() {
		t.Fatal("a fresh credit of 2 is not free twice")
	}
	got := make(chan int, 3)
	hold := make(chan struct{})
	var wg sync.WaitGroup
	queueWaiter(t, &wg, c, 1, 1, got, hold)
	queueWaiter(t, &wg, c, 2, 2, got, hold)
	c.release() // to reader 1, which may not have run yet
	if c.tryAcquire() {
		t.Fatal("a reader barged: it took the credit released to the waiting reader 1")
	}
	// The barging reader queues instead: behind reader 2.
	queueWaiter(t, &wg, c, 3, 2, got, hold)
	c.release() // to reader 2
	if c.tryAcquire() {
		t.Fatal("a reader barged ahead of readers 2 and 3")
	}
	if a, b := <-got, <-got; a+b != 3 {
		t.Fatalf("credits went to readers %d and %d, want 1 and 2", a, b)
	}
	close(hold) // 1 and 2 pass their credits on: to 3, then to the pool
	if id := <-got; id != 3 {
		t.Fatalf("credit went to reader %d, want 3", id)
	}
	wg.Wait()
	if !c.tryAcquire() || !c.tryAcquire() || c.tryAcquire() {
		t.Fatal("after the queue drained the credit does not hold exactly 2 again")
	}
}

// TestOutputCreditQueueBounded: a queue that never empties does not grow
// its array with every hand-out.
func TestOutputCreditQueueBounded(t *testing.T) {
	c := NewOutputCredit(1)
	if !c.tryAcquire() {
		t.Fatal("a fresh credit of 1 is not free")
	}
	wakes := make([]chan struct{}, 4)
	for i := range wakes {
		wakes[i] = make(chan struct{}, 1)
	}
	// One goroutine plays every reader: queue three, then for each
	// hand-out, take the credit and queue the reader again.
	for i := range 3 {
		if c.join(wakes[i]) {
			t.Fatal("a held credit of 1 was taken")
		}
	}
	for i := range 10000 {
		w := wakes[i%3]
		c.release()
		select {
		case <-w:
		default:
			t.Fatalf("hand-out %d did not go to the oldest waiter", i)
		}
		if c.join(w) { // as acquire does, without blocking
			t.Fatalf("hand-out %d: a held credit was taken", i)
		}
		if c.waiting() != 3 {
			t.Fatalf("hand-out %d: %d waiting, want 3", i, c.waiting())
		}
	}
	if n := cap(c.waiters); n > 16 {
		t.Fatalf("queue array has grown to %d for 3 waiters", n)
	}
}
