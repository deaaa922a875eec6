package unifiedexec

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/codexec/codex/rpc"
	"log/slog"
)

func TestChunkClass(t *testing.T) {
	for _, tc := range []struct{ n, class int }{
		{0, -1}, {32<<10 - 1, -1}, {32 << 10, 0}, {64 << 10, 0}, {64<<10 + 1, 1},
		{256 << 10, 2}, {256<<10 + 1, 3}, {4 << 20, 6}, {4<<20 + 1, -1},
	} {
		if got := chunkClass(tc.n); got != tc.class {
			t.Errorf("chunkClass(%d) = %d, want %d", tc.n, got, tc.class)
		}
		b := getChunk(tc.n)
		if len(b) != tc.n || (tc.class >= 0 && cap(b) != minPooledChunk<<tc.class) {
			t.Errorf("getChunk(%d): len %d cap %d", tc.n, len(b), cap(b))
		}
		putChunk(b)
	}
}

// feedOutput runs a client connection over a pipe and writes n output
// frames of distinct large chunks for process "p", then exited and closed;
// with step, it waits for a value on step after each output frame. It
// returns the chunks sent.
func feedOutput(t *testing.T, c *Client, p *Process, n int, step <-chan struct{}) [][]byte {
	t.Helper()
	c.procs["p"] = p
	r, w := io.Pipe()
	conn := c.newConn(rpc.NewStdioFramer(r, io.Discard, r, "test", 1<<20), false)
	t.Cleanup(func() {
		_ = conn.Close()
		conn.Wait()
	})
	var sent [][]byte
	var frames [][]byte
	for i := range n {
		data := bytes.Repeat([]byte{byte('A' + i%26)}, 200<<10+i*1000)
		sent = append(sent, data)
		frames = append(frames, append(serverOutput("p", uint64(i+1), "stdout", data), '\n'))
	}
	end := fmt.Appendf(nil, `{"method":"process/exited","params":{"processId":"p","seq":%d,"exitCode":0,"sandboxDenied":false}}`+"\n", n+1)
	end = fmt.Appendf(end, `{"method":"process/closed","params":{"processId":"p","seq":%d}}`+"\n", n+2)
	go func() {
		for _, f := range frames {
			if _, err := w.Write(f); err != nil {
				return
			}
			if step != nil {
				select {
				case <-step:
				case <-time.After(10 * time.Second):
					return
				}
			}
		}
		_, _ = w.Write(end)
	}()
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("process not closed")
	}
	return sent
}

// TestChunksKeptByCallbacks: chunks handed to OnOutput or OnEvent may be
// kept by the callback: later output never reuses their memory.
func TestChunksKeptByCallbacks(t *testing.T) {
	for _, name := range []string{"OnOutput", "OnEvent", "OnOutput and Stdout"} {
		t.Run(name, func(t *testing.T) {
			c := &Client{procs: map[string]*Process{}, log: slog.New(slog.DiscardHandler)}
			var kept [][]byte
			o := StartOptions{OutputBytesCap: -1}
			switch name {
			case "OnEvent":
				o.OnEvent = func(ev Event) {
					if ev.Kind == EventOutput {
						kept = append(kept, ev.Data)
					}
				}
			default:
				o.OnOutput = func(ch Chunk) { kept = append(kept, ch.Data) }
				if strings.Contains(name, "Stdout") {
					o.Stdout = io.Discard
				}
			}
			sent := feedOutput(t, c, newProcess(c, "p", o), 40, nil)
			if len(kept) != len(sent) {
				t.Fatalf("%d chunks, want %d", len(kept), len(sent))
			}
			for i := range sent {
				if !bytes.Equal(kept[i], sent[i]) {
					t.Fatalf("chunk %d changed after it was delivered", i)
				}
			}
		})
	}
}

// recorder is a Stdout that checks each write as it comes and notes the
// address of its memory, without keeping the slice; it sends on step after
// each write, so that the next chunk is sent only then.
type recorder struct {
	step  chan struct{}
	want  [][]byte
	n     int
	bad   []string
	addrs map[*byte]int
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.n >= len(r.want) || !bytes.Equal(b, r.want[r.n]) {
		r.bad = append(r.bad, fmt.Sprintf("write %d: %d bytes, wrong", r.n, len(b)))
	}
	r.n++
	r.addrs[&b[0]]++
	r.step <- struct{}{}
	return len(b), nil
}

// TestChunksReusedForWriters: output that goes only to Stdout (or only to
// the capture) cycles through pooled memory, and every byte arrives
// intact, in the capture too.
func TestChunksReusedForWriters(t *testing.T) {
	const n = 40
	c := &Client{procs: map[string]*Process{}, log: slog.New(slog.DiscardHandler)}
	rec := &recorder{step: make(chan struct{}, 1), addrs: map[*byte]int{}}
	for i := range n {
		rec.want = append(rec.want, bytes.Repeat([]byte{byte('A' + i%26)}, 200<<10+i*1000))
	}
	sent := feedOutput(t, c, newProcess(c, "p", StartOptions{Stdout: rec, OutputBytesCap: -1}), n, rec.step)
	if rec.n != n || len(rec.bad) > 0 {
		t.Fatalf("%d writes of %d: %v", rec.n, n, rec.bad)
	}
	if len(rec.addrs) > n/2 {
		t.Errorf("%d distinct buffers for %d chunks: output memory is not reused", len(rec.addrs), n)
	}
	c2 := &Client{procs: map[string]*Process{}, log: slog.New(slog.DiscardHandler)}
	p := newProcess(c2, "p", StartOptions{OutputBytesCap: -1})
	feedOutput(t, c2, p, n, nil)
	if got := p.Current().Stdout; !bytes.Equal(got, bytes.Join(sent, nil)) {
		t.Fatalf("capture of %d bytes differs from the %d sent", len(got), len(bytes.Join(sent, nil)))
	}
}
