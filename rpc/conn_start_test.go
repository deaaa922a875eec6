package rpc_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/codexec/codex/rpc"
)

// TestConnStartAwait: Start returns once the request is written (over a
// pipe: once the peer has read it), Await takes the answer later, and an
// Await whose connection ends gets ErrClosed.
func TestConnStartAwait(t *testing.T) {
	in, sc, c := pipeConn(t, rpc.Options{}, 1<<20)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	started := make(chan *rpc.Pending, 1)
	go func() {
		p, err := c.Start(ctx, "m", map[string]int{"a": 1})
		if err != nil {
			t.Error(err)
		}
		started <- p
	}()
	req := readLine(t, sc)
	if req["method"] != "m" || fmt.Sprint(req["params"]) != "map[a:1]" {
		t.Fatalf("request %v", req)
	}
	p := <-started
	if _, err := io.WriteString(in, fmt.Sprintf(`{"id":%v,"result":{"x":7}}`+"\n", req["id"])); err != nil {
		t.Fatal(err)
	}
	var res struct{ X int }
	if err := p.Await(ctx, &res); err != nil || res.X != 7 {
		t.Fatalf("await: %+v %v", res, err)
	}

	go func() {
		p, err := c.Start(ctx, "n", nil)
		if err != nil {
			t.Error(err)
		}
		started <- p
	}()
	readLine(t, sc)
	p = <-started
	_ = in.Close() // the peer goes away
	if err := p.Await(ctx, nil); !errors.Is(err, rpc.ErrClosed) {
		t.Fatalf("await after the end: %v", err)
	}
	if _, err := c.Start(ctx, "o", nil); !errors.Is(err, rpc.ErrClosed) {
		t.Fatalf("start after the end: %v", err)
	}
}
