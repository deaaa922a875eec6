package execserver

import (
	"bytes"
	"math/rand"
	"testing"

	"github.com/codexec/codex/proc"
)

// TestEventLogRetentionModel appends random chunks and checks every read
// against a plain list model: newest chunks within the byte and count caps,
// exact bytes, eviction counters.
func TestEventLogRetentionModel(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, cap := range []int{1, 100, 4096, 10000} {
		l := newEventLog(cap, 7)
		type rec struct {
			seq  uint64
			data []byte
		}
		var all []rec
		var total uint64
		for i := 0; i < 500; i++ {
			data := make([]byte, rng.Intn(3000)+1)
			rng.Read(data)
			seq := l.appendOutput(proc.StreamStdout, data)
			all = append(all, rec{seq, data})
			total += uint64(len(data))
			// Model: newest chunks while within cap (at least one) and 7.
			var want []rec
			size := 0
			for j := len(all) - 1; j >= 0 && len(want) < 7; j-- {
				if len(want) > 0 && size+len(all[j].data) > cap {
					break
				}
				size += len(all[j].data)
				want = append([]rec{all[j]}, want...)
			}
			r, _, _ := l.read(0, -1)
			if len(r.Chunks) != len(want) {
				t.Fatalf("cap %d step %d: %d chunks retained, want %d", cap, i, len(r.Chunks), len(want))
			}
			var kept uint64
			for k, c := range r.Chunks {
				if c.seq != want[k].seq || !bytes.Equal(c.data, want[k].data) {
					t.Fatalf("cap %d step %d: chunk %d differs", cap, i, k)
				}
				kept += uint64(len(c.data))
			}
			if r.EvictedBytes+kept != total {
				t.Fatalf("cap %d step %d: evicted %d + kept %d != %d", cap, i, r.EvictedBytes, kept, total)
			}
		}
	}
}

// TestRingBlocksBounded: a stream through a 1 MiB log holds at most the
// retained bytes plus three blocks, and in steady state appending
// allocates nothing (no regrowth garbage per process).
func TestRingBlocksBounded(t *testing.T) {
	l := newEventLog(1<<20, 0)
	chunk := make([]byte, 200<<10)
	for range 200 {
		l.appendOutput(proc.StreamStdout, chunk)
	}
	held := func() int {
		n := len(l.ring.spare) * ringMaxBlock
		for _, b := range l.ring.blocks {
			n += cap(b.buf)
		}
		return n
	}
	if h := held(); h > 1<<20+3*ringMaxBlock {
		t.Fatalf("ring holds %d bytes for 1 MiB retained", h)
	}
	r := &l.ring
	step := func() { // what appendOutput does to the ring: evict, then append
		r.drop(r.end + uint64(len(chunk)) - 1<<20)
		r.append(chunk)
		r.trimSpare()
	}
	if a := testing.AllocsPerRun(200, step); a > 0.1 {
		t.Fatalf("%.2f ring allocations per append in steady state", a)
	}
	// A short output costs one small block.
	small := newEventLog(1<<20, 0)
	small.appendOutput(proc.StreamStdout, []byte("hi\n"))
	if len(small.ring.blocks) != 1 || cap(small.ring.blocks[0].buf) != ringMinBlock {
		t.Fatalf("short output: %d blocks", len(small.ring.blocks))
	}
}
