package unifiedexec

import (
	"context"
	"errors"
	"testing"

	"github.com/codexec/codex/wire"
)

func TestDeliverInSeqOrder(t *testing.T) {
	c := &Client{procs: map[string]*Process{}}
	var got []uint64
	p := newProcess(c, "p", StartOptions{OnOutput: func(ch Chunk) { got = append(got, ch.Seq) }})
	c.procs["p"] = p
	for _, ev := range []Event{
		{Seq: 4, Kind: EventClosed},
		{Seq: 1, Kind: EventOutput, Stream: "stdout", Data: []byte("a")},
		{Seq: 3, Kind: EventExited, ExitCode: 7},
	} {
		p.deliver([]Event{ev})
	}
	select {
	case <-p.Done():
		t.Fatal("closed published before seq 2")
	default:
	}
	p.deliver([]Event{{Seq: 2, Kind: EventOutput, Stream: "stderr", Data: []byte("b")}})
	p.deliver([]Event{{Seq: 2, Kind: EventOutput, Stream: "stderr", Data: []byte("dup")}, {Seq: 5, Kind: EventOutput, Data: []byte("late")}})
	st, err := p.Wait(context.Background())
	if err != nil || st.Code != 7 {
		t.Fatalf("Wait: %+v %v", st, err)
	}
	if len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("output seqs %v, want [1 2]", got)
	}
	s := p.Current()
	if string(s.Stdout) != "a" || string(s.Stderr) != "b" || !s.Closed || s.LastSeq != 4 {
		t.Fatalf("snapshot %+v", s)
	}
	if len(c.procs) != 0 {
		t.Fatal("route not removed after closed")
	}
}

func TestOutputCap(t *testing.T) {
	c := &Client{procs: map[string]*Process{}}
	p := newProcess(c, "p", StartOptions{OutputBytesCap: 5})
	p.deliver([]Event{{Seq: 1, Kind: EventOutput, Stream: "stdout", Data: []byte("abcdef")}})
	if s := p.Current(); string(s.Stdout) != "abcde" || s.StdoutDropped != 1 {
		t.Fatalf("snapshot %+v", s)
	}
}

func TestRecoveredEvents(t *testing.T) {
	code := 3
	res := wire.ReadResult{
		Chunks:  []wire.ReadChunk{{Seq: 5, Stream: "stdout", Chunk: wire.Bytes("x")}, {Seq: 7, Stream: "stdout", Chunk: wire.Bytes("y")}},
		NextSeq: 9, Exited: true, ExitCode: &code, Closed: true,
	}
	evs, err := recoveredEvents(4, res)
	if err != nil || len(evs) != 4 {
		t.Fatalf("events %+v, %v", evs, err)
	}
	var exited, closed bool
	for _, ev := range evs {
		exited = exited || (ev.Kind == EventExited && ev.Seq == 6 && ev.ExitCode == 3)
		closed = closed || (ev.Kind == EventClosed && ev.Seq == 8)
	}
	if !exited || !closed {
		t.Fatalf("events %+v", evs)
	}
	if _, err := recoveredEvents(2, res); !errors.Is(err, ErrTransport) {
		t.Fatalf("a gap gave %v", err)
	}
}
