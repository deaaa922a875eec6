package unifiedexec

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestGrowPipe: the pipe from the supervised server is grown to
// serverPipeBytes when the system allows it.
func TestGrowPipe(t *testing.T) {
	if b, err := os.ReadFile("/proc/sys/fs/pipe-max-size"); err != nil {
		t.Skip(err)
	} else if max, _ := strconv.Atoi(strings.TrimSpace(string(b))); max < serverPipeBytes {
		t.Skipf("pipe-max-size %d", max)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	growPipe(r)
	n, err := unix.FcntlInt(r.Fd(), unix.F_GETPIPE_SZ, 0)
	if err != nil || n < serverPipeBytes {
		t.Fatalf("pipe size %d (%v), want ≥ %d", n, err, serverPipeBytes)
	}
}

// TestForwarderGrowsStdoutPipe: Run's output to a pipe grows it once a
// chunk of a stream arrives (streamChunk or more), not for small output.
func TestForwarderGrowsStdoutPipe(t *testing.T) {
	if b, err := os.ReadFile("/proc/sys/fs/pipe-max-size"); err != nil {
		t.Skip(err)
	} else if max, _ := strconv.Atoi(strings.TrimSpace(string(b))); max < serverPipeBytes {
		t.Skipf("pipe-max-size %d", max)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	size := func() int {
		n, err := unix.FcntlInt(r.Fd(), unix.F_GETPIPE_SZ, 0)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := size()
	f := newForwarder(w, nil, 0)
	f.writer(0).Write(make([]byte, 100))
	if got := size(); got != before {
		t.Fatalf("pipe grown to %d after a small write", got)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, streamChunk)
		for n := 0; n < streamChunk+100; {
			k, err := r.Read(buf)
			if err != nil {
				return
			}
			n += k
		}
	}()
	f.writer(0).Write(make([]byte, streamChunk))
	<-done
	if got := size(); got < serverPipeBytes {
		t.Fatalf("pipe of %d bytes after a stream chunk, want ≥ %d", got, serverPipeBytes)
	}
}
