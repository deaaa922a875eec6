//go:build linux

package proc

import (
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// holdsSocket finds a socket wherever it sits in a large fd table (it
// reads the highest fds first), and reports a socket nobody holds as not
// held.
func TestHoldsSocketAnyPosition(t *testing.T) {
	var extra []int
	t.Cleanup(func() {
		for _, fd := range extra {
			_ = unix.Close(fd)
		}
	})
	pair := func() [2]int {
		t.Helper()
		p, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		extra = append(extra, p[0], p[1])
		return p
	}
	inode := func(fd int) string {
		t.Helper()
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			t.Fatal(err)
		}
		return "socket:[" + strconv.FormatUint(st.Ino, 10) + "]"
	}
	low := pair() // a low-numbered socket, opened before the many
	for range 300 {
		fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		extra = append(extra, fd)
	}
	high := pair()
	self := os.Getpid()
	for name, fd := range map[string]int{"lowest": low[0], "highest": high[1]} {
		if !holdsSocket(self, inode(fd)) {
			t.Errorf("the %s socket (fd %d) is not found", name, fd)
		}
	}
	gone := pair()
	want := inode(gone[0])
	_ = unix.Close(gone[0])
	_ = unix.Close(gone[1])
	extra = extra[:len(extra)-2]
	if holdsSocket(self, want) {
		t.Errorf("a closed socket %s is reported held", want)
	}
}
