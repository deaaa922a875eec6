package escalate

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// pair returns the two ends of a Unix socketpair of type typ as blocking
// fdConns, closed at the end of the test.
func pair(t *testing.T, typ int) (fdConn, fdConn) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, typ|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeFDs(fds[:]) })
	return fdConn(fds[0]), fdConn(fds[1])
}

// pipe returns a pipe as files closed at the end of the test.
func pipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// openFDs counts the descriptors open in this process.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// checkPassedFD checks that fd is close-on-exec and is the write end of
// the pipe whose read end is r.
func checkPassedFD(t *testing.T, fd int, r *os.File) {
	t.Helper()
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	if err != nil || flags&unix.FD_CLOEXEC == 0 {
		t.Errorf("received fd flags = %#x, %v; want FD_CLOEXEC", flags, err)
	}
	if _, err := unix.Write(fd, []byte("via-fd")); err != nil {
		t.Fatalf("writing to the received fd: %v", err)
	}
	unix.Close(fd)
	buf := make([]byte, 16)
	n, _ := r.Read(buf)
	if got := string(buf[:n]); got != "via-fd" {
		t.Errorf("pipe got %q, want via-fd", got)
	}
}

func TestStreamRoundTripPayloadAndFD(t *testing.T) {
	a, b := pair(t, unix.SOCK_STREAM)
	r, w := pipe(t)
	payload := []byte(`{"fds":[1]}`)
	if err := writeFrame(a, payload, []int{int(w.Fd())}); err != nil {
		t.Fatal(err)
	}
	got, fds, err := readFrame(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, payload) || len(fds) != 1 {
		t.Fatalf("got %q with %d fds, want %q with 1", got, len(fds), payload)
	}
	w.Close() // the received copy must keep the pipe open on its own
	checkPassedFD(t, fds[0], r)
}

func TestDatagramRoundTripWithFD(t *testing.T) {
	a, b := pair(t, unix.SOCK_DGRAM)
	r, w := pipe(t)
	if err := sendDatagram(a, []byte{0}, []int{int(w.Fd())}); err != nil {
		t.Fatal(err)
	}
	data, fds, err := recvDatagram(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, []byte{0}) || len(fds) != 1 {
		t.Fatalf("got %q with %d fds, want 0x00 with 1", data, len(fds))
	}
	w.Close()
	checkPassedFD(t, fds[0], r)
}

// seventeen returns MaxFDs+1 descriptors (all the read end of one pipe).
func seventeen(t *testing.T) []int {
	r, _ := pipe(t)
	fds := make([]int, MaxFDs+1)
	for i := range fds {
		fds[i] = int(r.Fd())
	}
	return fds
}

func TestTooManyFDsRefusedOnSend(t *testing.T) {
	a, _ := pair(t, unix.SOCK_STREAM)
	err := writeFrame(a, []byte("{}"), seventeen(t))
	if !errors.Is(err, ErrTooManyFDs) || !errors.Is(err, ErrInvalidInput) || err.Error() != "too many fds" {
		t.Errorf("writeFrame: %v, want too many fds (invalid input)", err)
	}
	d, _ := pair(t, unix.SOCK_DGRAM)
	if err := sendDatagram(d, []byte{0}, seventeen(t)); !errors.Is(err, ErrTooManyFDs) {
		t.Errorf("sendDatagram: %v, want too many fds", err)
	}
}

func TestTooManyFDsRefusedOnReceive(t *testing.T) {
	for _, typ := range []int{unix.SOCK_STREAM, unix.SOCK_DGRAM} {
		a, b := pair(t, typ)
		fds := seventeen(t)
		before := openFDs(t)
		// Bypass our own send check: a peer that ignores the limit.
		if _, err := unix.SendmsgN(int(a), []byte{1, 0, 0, 0, 'x'}, unix.UnixRights(fds...), nil, 0); err != nil {
			t.Fatal(err)
		}
		var err error
		if typ == unix.SOCK_STREAM {
			_, _, err = readFrame(b)
		} else {
			_, _, err = recvDatagram(b)
		}
		if !errors.Is(err, ErrTooManyFDs) || !errors.Is(err, ErrInvalidInput) {
			t.Errorf("type %d: %v, want too many fds", typ, err)
		}
		if after := openFDs(t); after != before {
			t.Errorf("type %d: %d fds open after, %d before: received fds leaked", typ, after, before)
		}
	}
}

func TestOversizedLengthRefused(t *testing.T) {
	a, b := pair(t, unix.SOCK_STREAM)
	if _, err := unix.Write(int(a), []byte{0xff, 0xff, 0xff, 0xff}); err != nil {
		t.Fatal(err)
	}
	_, _, err := readFrame(b)
	if !errors.Is(err, ErrMessageTooLarge) || !errors.Is(err, ErrInvalidInput) || err.Error() != "message too large" {
		t.Errorf("readFrame: %v, want message too large (invalid input)", err)
	}
	d, _ := pair(t, unix.SOCK_DGRAM)
	if err := sendDatagram(d, make([]byte, MaxDatagram+1), nil); !errors.Is(err, ErrMessageTooLarge) {
		t.Errorf("sendDatagram: %v, want message too large", err)
	}
}

func TestOversizedDatagramRefusedOnReceive(t *testing.T) {
	a, b := pair(t, unix.SOCK_DGRAM)
	if _, err := unix.Write(int(a), make([]byte, MaxDatagram+1)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := recvDatagram(b); !errors.Is(err, ErrMessageTooLarge) {
		t.Errorf("recvDatagram: %v, want message too large", err)
	}
}

func TestEOF(t *testing.T) {
	cases := []struct {
		name, sent, want string
	}{
		{"before the header", "", "socket closed while receiving frame header"},
		{"inside the header", "\x05\x00", "socket closed while receiving frame header"},
		{"inside the payload", "\x05\x00\x00\x00ab", "socket closed while receiving frame payload"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, b := pair(t, unix.SOCK_STREAM)
			if c.sent != "" {
				if _, err := unix.Write(int(a), []byte(c.sent)); err != nil {
					t.Fatal(err)
				}
			}
			unix.Shutdown(int(a), unix.SHUT_WR)
			_, _, err := readFrame(b)
			if !errors.Is(err, io.ErrUnexpectedEOF) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("readFrame: %v, want unexpected EOF %q", err, c.want)
			}
		})
	}
}

// TestLargeFramePartialIO sends a frame far larger than the socket
// buffer between a blocking and a non-blocking (polled) end, both ways,
// so that both sides go through partial writes and reads.
func TestLargeFramePartialIO(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	f, pc, err := newPollFile(fds[1], "polled")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	payload := bytes.Repeat([]byte("0123456789abcdef"), 256<<10) // 4 MiB
	for _, dir := range []struct {
		name     string
		from, to msgConn
	}{{"blocking to polled", fdConn(fds[0]), pc}, {"polled to blocking", pc, fdConn(fds[0])}} {
		done := make(chan error, 1)
		go func() { done <- writeFrame(dir.from, payload, nil) }()
		got, _, err := readFrame(dir.to)
		if werr := <-done; werr != nil || err != nil {
			t.Fatalf("%s: write %v, read %v", dir.name, werr, err)
		}
		if !bytes.Equal(got, payload) {
			t.Fatalf("%s: payload differs (%d bytes, want %d)", dir.name, len(got), len(payload))
		}
	}
}
