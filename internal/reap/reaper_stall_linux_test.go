//go:build linux

package reap

import (
	"testing"
	"time"
)

// TestStartChildrenStuckForkStallsOthers: a fork whose exec hangs (a
// binary on a stuck mount) holds the fork lock shared for as long as it
// hangs. Had the reaper of unowned children, which every server runs, asked
// for the lock exclusively on the next SIGCHLD or Done, sync.RWMutex would
// have made every later fork wait behind that writer: one stuck start would
// have stopped every start of the server. The reaper only tries the lock
// (TryExclusive) and comes back later.
func TestStartChildrenStuckForkStallsOthers(t *testing.T) {
	r := StartChildren(nil, time.Millisecond)
	defer r.Close()
	time.Sleep(20 * time.Millisecond) // the first pass is over
	release := make(chan struct{})
	stuck := make(chan struct{})
	go func() {
		_, _ = Fork(func() (int, error) {
			close(stuck)
			<-release // an exec that hangs
			return 0, nil
		})
	}()
	<-stuck
	defer close(release)
	kickAll() // any command's end (an owner's Done)
	time.Sleep(50 * time.Millisecond)
	other := make(chan struct{})
	go func() {
		_, _ = Fork(func() (int, error) { return 0, nil })
		close(other)
	}()
	select {
	case <-other:
	case <-time.After(2 * time.Second):
		t.Fatal("a fork waited 2 s behind a stuck fork and the reaper's pass: one hung exec stops every start")
	}
}
