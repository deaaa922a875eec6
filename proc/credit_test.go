package proc_test

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codexec/codex/proc"
)

// creditRun starts n writers of size bytes each whose OutputFunc blocks until
// the test lets it go, as a connection whose client stopped reading does.
// It lets one call go whenever no new call arrived for a moment, but none
// before hold calls are blocked at once, and returns the most calls ever
// blocked at once and the bytes delivered.
func creditRun(t *testing.T, n, size int, credit *proc.OutputCredit, hold int32) (maxBlocked int32, total int64) {
	var (
		blocked atomic.Int32
		bytes   atomic.Int64
		arrived = make(chan struct{}, 1024)
		release = make(chan struct{})
	)
	out := func(_ proc.Stream, b []byte) {
		v := blocked.Add(1)
		for m := atomic.LoadInt32(&maxBlocked); v > m && !atomic.CompareAndSwapInt32(&maxBlocked, m, v); {
			m = atomic.LoadInt32(&maxBlocked)
		}
		arrived <- struct{}{}
		<-release
		blocked.Add(-1)
		bytes.Add(int64(len(b)))
	}
	var procs []*proc.Process
	for range n {
		p, err := proc.Start(helper("print", strconv.Itoa(size)), out, proc.Options{Credit: credit})
		if err != nil {
			t.Fatal(err)
		}
		procs = append(procs, p)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for _, p := range procs {
			<-p.OutputDone()
		}
		close(done)
	}()
	deadline := time.After(waitLimit)
	for finished := false; !finished; {
		select {
		case <-arrived:
		case <-time.After(20 * time.Millisecond):
			// Quiet: every reader that could read has blocked; let one go.
			if atomic.LoadInt32(&maxBlocked) < hold {
				continue // a loaded machine starts the writers slowly
			}
			select {
			case release <- struct{}{}:
			default:
			}
		case <-done:
			finished = true
		case <-deadline:
			t.Fatal("output not delivered in time")
		}
	}
	wg.Wait()
	for _, p := range procs {
		p.Close()
	}
	return atomic.LoadInt32(&maxBlocked), bytes.Load()
}

// TestOutputCreditBoundsChunksInFlight: with a credit of 2, six writers
// facing a stalled consumer hold at most two chunks; the others wait
// without reading. Without a credit every writer holds one: nothing is
// let go there before all six are held, so that slow starts on a loaded
// machine cannot make the check blind.
func TestOutputCreditBoundsChunksInFlight(t *testing.T) {
	const n, size = 6, 256 << 10
	got, total := creditRun(t, n, size, proc.NewOutputCredit(2), 0)
	if got > 2 || total != n*size {
		t.Fatalf("credit 2: %d chunks held at once, %d of %d bytes delivered", got, total, n*size)
	}
	got, total = creditRun(t, n, size, nil, n)
	if got < n || total != n*size {
		t.Fatalf("no credit: %d chunks held at once (the test cannot tell), %d of %d bytes", got, total, n*size)
	}
}
