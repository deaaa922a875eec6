package cli

import (
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestWatchStdinClose: data does not end the watch, end of file does; and
// stop ends a watch whose input never closes, without waiting on a read.
func TestWatchStdinClose(t *testing.T) {
	defer goleak.VerifyNone(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	closed, stop, err := watchStdinClose(int(r.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("some input\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-closed:
		t.Fatal("closed after data, before end of file")
	case <-time.After(100 * time.Millisecond):
	}
	w.Close()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("not closed 5 s after end of file")
	}
	stop()

	r2, w2, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	defer w2.Close()
	closed, stop, err = watchStdinClose(int(r2.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("stop did not return within 5 s")
	}
	select {
	case <-closed:
		t.Error("stopping the watch reported end of file")
	default:
	}
}
