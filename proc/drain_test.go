//go:build linux

package proc_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/codexec/codex/proc"
)

// A child that writes a burst and exits at once, while a background
// descendant keeps its stdout open and writes forever: ExitFlushed fires
// promptly (OutputDone never would), and by then every byte of the burst
// and the line written last before the exit were delivered. Over a pipe and
// over a PTY (where the kernel hangs the terminal up when the shell, its
// session leader, exits, so only the order is at stake), many times, since
// the race is between the exit and the reader.
func TestExitFlushedDeliversPreExitOutput(t *testing.T) {
	for _, tty := range []bool{false, true} {
		t.Run(fmt.Sprintf("tty=%v", tty), func(t *testing.T) {
			n := 200_000
			if tty {
				n = 64 << 10
			}
			script := fmt.Sprintf(`(while :; do echo tick; done) & head -c %d /dev/zero | tr '\0' x; echo END`, n)
			var worst time.Duration
			for i := 0; i < 25; i++ {
				spec := sh(script)
				spec.TTY = tty
				p, s := start(t, spec, proc.Options{})
				wait(t, p.Exited(), "exit")
				exited := time.Now()
				wait(t, p.ExitFlushed(), "pre-exit output")
				worst = max(worst, time.Since(exited))
				out := []byte(s.String())
				if got := bytes.Count(out, []byte("x")); got != n || !bytes.Contains(out, []byte("END")) {
					t.Fatalf("run %d: at ExitFlushed %d of %d x delivered, END seen: %v", i, got, n, bytes.Contains(out, []byte("END")))
				}
				if !tty { // a PTY is hung up when its session leader exits
					select {
					case <-p.OutputDone():
						t.Fatalf("run %d: output ended while the descendant writes", i)
					default:
					}
				}
				p.Close()
			}
			t.Logf("longest exit → ExitFlushed: %v", worst)
		})
	}
}
