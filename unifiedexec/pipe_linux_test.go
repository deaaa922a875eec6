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
