package agenttool

import (
	"bytes"
	"strings"
	"testing"
)

func TestSplitValidUTF8Prefix(t *testing.T) {
	buf := []byte("hello word!")
	if got := splitValidUTF8Prefix(&buf, 5, false); string(got) != "hello" {
		t.Fatalf("first %q", got)
	}
	if got := splitValidUTF8Prefix(&buf, 5, false); string(got) != " word" {
		t.Fatalf("second %q", got)
	}
	if string(buf) != "!" {
		t.Fatalf("left %q", buf)
	}

	buf = []byte("ééé")
	if got := splitValidUTF8Prefix(&buf, 3, false); string(got) != "é" {
		t.Fatalf("é: %q", got)
	}

	buf = []byte{0xff, 'a', 'b'}
	if got := splitValidUTF8Prefix(&buf, 2, false); !bytes.Equal(got, []byte{0xff}) {
		t.Fatalf("0xff: %q", got)
	}

	a, b := bytes.Repeat([]byte("a"), 4096), bytes.Repeat([]byte("b"), 4096)
	buf = append(append(append([]byte{}, a...), 0xff), b...)
	for _, want := range [][]byte{a, {0xff}, b} {
		if got := splitValidUTF8Prefix(&buf, 8192, false); !bytes.Equal(got, want) {
			t.Fatalf("got %d bytes, want %d", len(got), len(want))
		}
	}

	buf = bytes.Repeat([]byte{0xff}, 1024)
	for i := 0; i < 1024; i++ {
		if got := splitValidUTF8Prefix(&buf, 128, false); len(got) != 1 {
			t.Fatalf("step %d: %d bytes", i, len(got))
		}
	}
	if len(buf) != 0 {
		t.Fatalf("left %d", len(buf))
	}

	buf = []byte("x\xe2\x82")
	if got := splitValidUTF8Prefix(&buf, 10, false); string(got) != "x" {
		t.Fatalf("partial: %q", got)
	}
	if got := splitValidUTF8Prefix(&buf, 10, false); got != nil {
		t.Fatalf("incomplete char emitted early: %q", got)
	}
	if got := splitValidUTF8Prefix(&buf, 10, true); len(got) != 1 {
		t.Fatalf("final flush: %q", got)
	}
}

func TestDeltaStreamerCapsAndTranscript(t *testing.T) {
	var deltas []*ExecCommandOutputDeltaEvent
	s := newDeltaStreamer("call-1", func(e Event) { deltas = append(deltas, e.(*ExecCommandOutputDeltaEvent)) })
	s.maxDeltas = 3
	s.add([]byte(strings.Repeat("x", 5*OutputDeltaMaxBytes)))
	s.pump(true, false)
	if len(deltas) != 3 {
		t.Fatalf("%d deltas, want 3", len(deltas))
	}
	for _, d := range deltas {
		if d.CallID != "call-1" || d.Stream != "stdout" || len(d.Chunk) != OutputDeltaMaxBytes {
			t.Fatalf("delta %+v", d)
		}
	}
	if s.transcript.Retained() != 5*OutputDeltaMaxBytes {
		t.Fatalf("transcript %d", s.transcript.Retained())
	}
}

func TestSplitUTF8AcrossChunks(t *testing.T) {
	var got []byte
	s := newDeltaStreamer("c", func(e Event) { got = append(got, e.(*ExecCommandOutputDeltaEvent).Chunk...) })
	s.add([]byte("a\xe2"))
	s.pump(true, false)
	s.add([]byte("\x82\xacb"))
	s.pump(true, true)
	if string(got) != "a€b" {
		t.Fatalf("got %q", got)
	}
}
