package agenttool_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/codexec/codex/unifiedexec/agenttool"
)

func TestHeadTailBufferWorkedExample(t *testing.T) {
	b := agenttool.NewHeadTailBuffer(10)
	b.Push([]byte("0123456789"))
	if got := string(b.Bytes()); got != "0123456789" || b.Omitted() != 0 {
		t.Fatalf("after first push: %q omitted %d", got, b.Omitted())
	}
	b.Push([]byte("ab"))
	if got := string(b.Bytes()); got != "01234789ab" || b.Omitted() != 2 {
		t.Fatalf("bytes %q omitted %d", got, b.Omitted())
	}
	if got := string(b.BytesWithOmissionMarker()); got != "01234\n... 2 bytes omitted ...\n789ab" {
		t.Fatalf("marker render %q", got)
	}
}

func TestHeadTailBufferEdgeCaps(t *testing.T) {
	b := agenttool.NewHeadTailBuffer(0)
	b.Push([]byte("abc"))
	if b.Retained() != 0 || b.Omitted() != 3 || len(b.Bytes()) != 0 || len(b.SnapshotChunks()) != 0 {
		t.Fatalf("max 0: retained %d omitted %d", b.Retained(), b.Omitted())
	}
	b = agenttool.NewHeadTailBuffer(1)
	b.Push([]byte("abc"))
	if b.Retained() != 1 || b.Omitted() != 2 || string(b.Bytes()) != "c" {
		t.Fatalf("max 1: retained %d omitted %d bytes %q", b.Retained(), b.Omitted(), b.Bytes())
	}
}

func TestHeadTailBufferDrainResets(t *testing.T) {
	b := agenttool.NewHeadTailBuffer(10)
	b.Push([]byte("0123456789abc"))
	if chunks := b.DrainChunks(); len(chunks) == 0 {
		t.Fatal("drain returned nothing")
	}
	if b.Retained() != 0 || b.Omitted() != 0 {
		t.Fatalf("after drain: retained %d omitted %d", b.Retained(), b.Omitted())
	}
}

func TestHeadTailBufferSequences(t *testing.T) {
	b := agenttool.NewHeadTailBuffer(10)
	b.Push([]byte("0123456789"))
	b.Push([]byte("ABCDEFGHIJK"))
	if got := string(b.Bytes()); !strings.HasPrefix(got, "01234") || !strings.HasSuffix(got, "GHIJK") {
		t.Fatalf("got %q", got)
	}

	b = agenttool.NewHeadTailBuffer(10)
	b.Push([]byte("01"))
	b.Push([]byte("234"))
	if got := string(b.Bytes()); got != "01234" {
		t.Fatalf("got %q", got)
	}
	b.Push([]byte("567"))
	b.Push([]byte("89"))
	if got := string(b.Bytes()); got != "0123456789" || b.Omitted() != 0 {
		t.Fatalf("got %q omitted %d", got, b.Omitted())
	}
	b.Push([]byte("a"))
	if got := string(b.Bytes()); got != "012346789a" || b.Omitted() != 1 {
		t.Fatalf("got %q omitted %d", got, b.Omitted())
	}
}

func TestHeadTailBufferInterleavedSmallPushes(t *testing.T) {
	b := agenttool.NewHeadTailBuffer(10)
	for _, c := range []byte("0123456789ab") {
		b.Push(nil)
		b.Push([]byte{c})
	}
	chunks := b.SnapshotChunks()
	if len(chunks) != 2 || string(chunks[0]) != "01234" || string(chunks[1]) != "789ab" {
		t.Fatalf("snapshot %q", chunks)
	}
	if b.Retained() != 10 || b.Omitted() != 2 {
		t.Fatalf("retained %d omitted %d", b.Retained(), b.Omitted())
	}
}

func TestHeadTailBufferDefaultCap(t *testing.T) {
	b := agenttool.NewDefaultHeadTailBuffer()
	b.Push(bytes.Repeat([]byte("a"), agenttool.OutputMaxBytes))
	b.Push([]byte("bc"))
	if b.Retained() != agenttool.OutputMaxBytes {
		t.Fatalf("retained %d", b.Retained())
	}
	r := b.BytesWithOmissionMarker()
	if r[0] != 'a' || !bytes.HasSuffix(r, []byte("bc")) {
		t.Fatalf("render starts %q ends %q", r[:1], r[len(r)-2:])
	}
}
