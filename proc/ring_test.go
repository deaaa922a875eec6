package proc

import (
	"bytes"
	"math/rand"
	"testing"
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
			seq := l.appendOutput(StreamStdout, data)
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
