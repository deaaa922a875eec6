package rpc_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/codexec/codex/rpc"
)

// TestConnPredecode: a message the Predecode hook recognises reaches the
// handler as a notification with Decoded set and no Params; one it declines
// goes through the generic decoding; both arrive in the order they were
// read.
func TestConnPredecode(t *testing.T) {
	got := make(chan string, 4)
	opts := rpc.Options{
		Predecode: func(data []byte) (string, any) {
			if strings.Contains(string(data), `"fast"`) {
				return "fast", len(data)
			}
			return "", nil
		},
		Bind: func(*rpc.Conn) rpc.Handler {
			return rpc.HandlerFunc(func(_ context.Context, req *rpc.Request) (any, error) {
				got <- fmt.Sprintf("%s notif=%v decoded=%v params=%s", req.Method, req.IsNotification(), req.Decoded, req.Params)
				return nil, nil
			})
		},
	}
	w, _, _ := pipeConn(t, opts, 1<<20)
	frames := `{"method":"slow","params":{"a":1}}` + "\n" + `{"method":"fast","params":{}}` + "\n" + `{"method":"slow2"}` + "\n"
	go func() { _, _ = io.WriteString(w, frames) }()
	want := []string{
		`slow notif=true decoded=<nil> params={"a":1}`,
		`fast notif=true decoded=29 params=`,
		`slow2 notif=true decoded=<nil> params=`,
	}
	for _, wl := range want {
		select {
		case g := <-got:
			if g != wl {
				t.Fatalf("got %q, want %q", g, wl)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no message; want %q", wl)
		}
	}
}

// TestStdioFramerLineSizes: lines longer than the read buffer, of varying
// sizes, come back whole and unchanged (the framer sizes a long line's
// buffer from the previous one).
func TestStdioFramerLineSizes(t *testing.T) {
	sizes := []int{300 << 10, 10, 500 << 10, 100 << 10, 300 << 10, 64 << 10, 1}
	var in strings.Builder
	for i, n := range sizes {
		in.WriteString(strings.Repeat(string(rune('a'+i)), n))
		in.WriteString("\r\n")
	}
	f := rpc.NewStdioFramer(strings.NewReader(in.String()), io.Discard, nil, "test", 1<<20)
	for i, n := range sizes {
		line, err := f.Read(context.Background())
		if err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		if want := strings.Repeat(string(rune('a'+i)), n); string(line) != want {
			t.Fatalf("line %d: got %d bytes, want %d of %q", i, len(line), n, want[:1])
		}
	}
	if _, err := f.Read(context.Background()); err != io.EOF {
		t.Fatalf("after the last line: %v, want io.EOF", err)
	}
}
