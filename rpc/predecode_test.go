package rpc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/codexec/codex/internal/rpctest"
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

// TestScenarioPredecodeLent: with Predecode, the framers read each message
// into the memory of the last one; the messages Predecode declines keep
// their Params intact while large recognised ones keep arriving, and the
// recognised ones are whole when Predecode sees them. Under both framers.
func TestScenarioPredecodeLent(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			a, b := tr.pair(t)
			const n = 40
			kept := make(chan json.RawMessage, n)
			bad := make(chan string, n)
			opts := rpc.Options{
				Predecode: func(data []byte) (string, any) {
					if !bytes.HasPrefix(data, []byte(`{"method":"fast"`)) {
						return "", nil
					}
					var m struct{ Params struct{ Fill string } }
					if err := json.Unmarshal(data, &m); err != nil || strings.Trim(m.Params.Fill, m.Params.Fill[:1]) != "" {
						bad <- fmt.Sprintf("fast message of %d bytes damaged: %v", len(data), err)
					}
					return "fast", true
				},
				Bind: func(*rpc.Conn) rpc.Handler {
					return rpc.HandlerFunc(func(_ context.Context, req *rpc.Request) (any, error) {
						if req.Method == "slow" {
							kept <- req.Params
						}
						return nil, nil
					})
				},
			}
			startConn(t, b, opts)
			t.Cleanup(func() { _ = a.Close(false) }) // first: b answers the close
			for i := range n {
				fill := strings.Repeat(string(rune('a'+i%26)), (i%7)*(40<<10)+1)
				rpctest.WriteRaw(t, a, fmt.Sprintf(`{"method":"fast","params":{"fill":"%s"}}`, fill))
				rpctest.WriteRaw(t, a, fmt.Sprintf(`{"method":"slow","params":{"i":%d,"pad":"%s"}}`, i, strings.Repeat("z", i*100)))
			}
			var got []json.RawMessage
			for len(got) < n {
				select {
				case p := <-kept:
					got = append(got, p)
				case msg := <-bad:
					t.Fatal(msg)
				case <-time.After(10 * time.Second):
					t.Fatalf("%d slow messages of %d", len(got), n)
				}
			}
			for i, p := range got {
				if want := fmt.Sprintf(`{"i":%d,"pad":"%s"}`, i, strings.Repeat("z", i*100)); string(p) != want {
					t.Fatalf("slow message %d changed after later reads: %.80s", i, p)
				}
			}
		})
	}
}
