package execserver

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/codexec/codex/proc"
	"github.com/codexec/codex/wire"
)

// TestCommandExecOutputCoalescesQueuedReads: what a child writes in many
// small writes while a delta is being sent comes out of the next read as
// one delta, in order: with the first send held until the child has
// exited, 1000 writes arrive in at most 2 deltas.
func TestCommandExecOutputCoalescesQueuedReads(t *testing.T) {
	var want bytes.Buffer
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&want, "line %04d\n", i)
	}
	src := filepath.Join(t.TempDir(), "burst")
	if err := os.WriteFile(src, want.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var mu sync.Mutex
	var got []wire.CommandExecOutputDelta
	emit := func(d wire.CommandExecOutputDelta) {
		mu.Lock()
		got = append(got, d)
		first := len(got) == 1
		mu.Unlock()
		if first {
			<-exited // every write is in the pipe (10 KB: the child never blocks)
		}
	}
	o := newExecOutputTo(emit, "p", true, -1)
	spec := proc.Spec{Argv: []string{"dd", "if=" + src, "bs=10", "status=none"}, Dir: "/", Env: []string{"PATH=/usr/bin:/bin"}}
	pr, err := proc.Start(spec, o.add, proc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	go func() { <-pr.Exited(); close(exited) }()
	<-pr.OutputDone()
	pr.Close()
	mu.Lock()
	defer mu.Unlock()
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
	if len(got) > 2 {
		t.Fatalf("1000 writes in %d deltas, want at most 2 (the first read, then the rest at once)", len(got))
	}
}

// TestCommandExecOutputCapZero: with cap 0 a stream that prints gets one
// empty delta flagged capReached, a silent one none.
func TestCommandExecOutputCapZero(t *testing.T) {
	var got []wire.CommandExecOutputDelta
	o := newExecOutputTo(func(d wire.CommandExecOutputDelta) { got = append(got, d) }, "z", true, 0)
	o.add(proc.StreamStderr, []byte("abc"))
	o.add(proc.StreamStderr, []byte("def"))
	if len(got) != 1 || got[0] != (wire.CommandExecOutputDelta{ProcessID: "z", Stream: wire.StreamStderr, DeltaBase64: "", CapReached: true}) {
		t.Fatalf("deltas %+v", got)
	}
}
