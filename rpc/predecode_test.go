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
