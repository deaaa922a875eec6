//go:build linux

package proc_test

import (
	"testing"
	"time"

	"github.com/codexec/codex/proc"
)

// TestOutputEnding: once a child without descendants was reaped and its
// output flushed, only EOF is left on its pipes (OutputEnding), and
// OutputDone follows; a descendant that keeps stdout open keeps it false.
func TestOutputEnding(t *testing.T) {
	discard := func(proc.Stream, []byte) {}
	p, err := proc.Start(sh("echo out; echo err >&2"), discard, proc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	select {
	case <-p.ExitFlushed():
	case <-time.After(waitLimit):
		t.Fatal("no exit")
	}
	if !p.OutputEnding() {
		t.Fatal("a reaped child without descendants: output not ending")
	}
	select {
	case <-p.OutputDone():
	case <-time.After(waitLimit):
		t.Fatal("OutputEnding, yet OutputDone did not follow")
	}
	if !p.OutputEnding() {
		t.Fatal("after OutputDone: output not ending")
	}

	q, err := proc.Start(sh("sleep 1000 & echo started"), discard, proc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	select {
	case <-q.ExitFlushed():
	case <-time.After(waitLimit):
		t.Fatal("no exit")
	}
	if q.OutputEnding() {
		t.Fatal("a descendant holds stdout open, yet the output is ending")
	}
	if err := q.Kill(); err != nil {
		t.Fatal(err)
	}
}
