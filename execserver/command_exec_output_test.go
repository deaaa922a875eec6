package execserver

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"sync"
	"testing"

	"github.com/codexec/codex/proc"
	"github.com/codexec/codex/wire"
)

// TestCommandExecOutputCoalescesQueuedReads: reads that arrive while a
// delta is being sent go out together as the next delta, in order, and
// close sends what is left before it returns.
func TestCommandExecOutputCoalescesQueuedReads(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var got []wire.CommandExecOutputDelta
	first := true
	emit := func(d wire.CommandExecOutputDelta) {
		mu.Lock()
		got = append(got, d)
		wait := first
		first = false
		mu.Unlock()
		if wait { // hold the first send until the burst is queued
			close(entered)
			<-release
		}
	}
	o := newExecOutputTo(emit, "p", true, -1)
	var want bytes.Buffer
	read := func(i int) {
		b := []byte(fmt.Sprintf("line %04d\n", i))
		want.Write(b)
		o.add(proc.StreamStdout, b)
	}
	read(0)
	<-entered
	for i := 1; i < 1000; i++ {
		read(i)
	}
	close(release)
	o.close()
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 {
		t.Fatalf("1000 reads in %d deltas, want 2 (the first alone, the queued 999 together)", len(got))
	}
	var all []byte
	for _, d := range got {
		b, _ := base64.StdEncoding.DecodeString(d.DeltaBase64)
		all = append(all, b...)
		if d.Stream != wire.StreamStdout || d.ProcessID != "p" || d.CapReached {
			t.Fatalf("delta %+v", d)
		}
	}
	if !bytes.Equal(all, want.Bytes()) {
		t.Fatalf("streamed %d bytes, want %d exactly", len(all), want.Len())
	}
}

// TestCommandExecOutputCapZero: with cap 0 a stream that prints gets one
// empty delta flagged capReached, a silent one none.
func TestCommandExecOutputCapZero(t *testing.T) {
	var got []wire.CommandExecOutputDelta
	o := newExecOutputTo(func(d wire.CommandExecOutputDelta) { got = append(got, d) }, "z", true, 0)
	o.add(proc.StreamStderr, []byte("abc"))
	o.add(proc.StreamStderr, []byte("def"))
	o.close()
	if len(got) != 1 || got[0] != (wire.CommandExecOutputDelta{ProcessID: "z", Stream: wire.StreamStderr, DeltaBase64: "", CapReached: true}) {
		t.Fatalf("deltas %+v", got)
	}
}
