package fshelper_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codexec/codex/fshelper"
	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wire"
)

type pipeClosers []io.Closer

func (cs pipeClosers) Close() error {
	for _, c := range cs {
		_ = c.Close()
	}
	return nil
}

// TestConnHandlersWatchThroughConn runs fs/watchMissing on a real
// connection: the params decode before the gate, the notification arrives
// through the connection, and a watch still armed when the connection ends
// leaves no goroutine (goleak in TestMain) and no descriptor behind.
func TestConnHandlersWatchThroughConn(t *testing.T) {
	fdsBefore := openFDs(t)
	var open atomic.Bool
	gate := func() error {
		if !open.Load() {
			return wire.ErrBeforeInitialize("filesystem")
		}
		return nil
	}
	aR, aW := io.Pipe()
	bR, bW := io.Pipe()
	server := rpc.NewConn(rpc.NewStdioFramer(aR, bW, pipeClosers{aR, bW}, "s", 1<<20), rpc.Options{Bind: func(c *rpc.Conn) rpc.Handler {
		hs := fshelper.ConnHandlers(nil)(c, gate)
		return rpc.HandlerFunc(func(ctx context.Context, req *rpc.Request) (any, error) {
			return hs[req.Method](ctx, req)
		})
	}})
	notes := make(chan string, 4)
	client := rpc.NewConn(rpc.NewStdioFramer(bR, aW, pipeClosers{bR, aW}, "c", 1<<20), rpc.Options{Bind: func(*rpc.Conn) rpc.Handler {
		return rpc.HandlerFunc(func(_ context.Context, req *rpc.Request) (any, error) {
			notes <- req.Method + " " + string(req.Params)
			return nil, nil
		})
	}})
	ctx := context.Background()
	d := t.TempDir()
	watch := func(id uint64, name string) (bool, error) {
		var res wire.WatchMissingResult
		err := client.Call(ctx, wire.MethodFSWatchMissing, map[string]any{"watchId": id, "missing": []string{wire.FileURI(filepath.Join(d, name))}}, &res)
		return res.Watching, err
	}
	var we *rpc.Error
	if err := client.Call(ctx, wire.MethodFSWatchMissing, map[string]any{"watchId": "x"}, nil); !errors.As(err, &we) || we.Code != rpc.CodeInvalidParams {
		t.Fatalf("bad params before the handshake: %v", err)
	}
	if _, err := watch(1, "a"); !errors.As(err, &we) || we.Message != "client must call initialize before using filesystem methods" {
		t.Fatalf("gate: %v", err)
	}
	open.Store(true)
	if ok, err := watch(1, "a"); !ok || err != nil {
		t.Fatalf("watch 1: %v %v", ok, err)
	}
	wmkdir(d, "a")
	select {
	case n := <-notes:
		var p wire.MissingChangedParams
		if n[:len(wire.MethodFSMissingChanged)] != wire.MethodFSMissingChanged || json.Unmarshal([]byte(n[len(wire.MethodFSMissingChanged)+1:]), &p) != nil || p.WatchID != 1 {
			t.Fatalf("notification %q", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no fs/missingChanged")
	}
	if ok, err := watch(2, "b"); !ok || err != nil {
		t.Fatalf("watch 2: %v %v", ok, err)
	}
	client.Close()
	server.Close()
	client.Wait()
	server.Wait()
	if after := openFDs(t); after != fdsBefore {
		t.Fatalf("descriptors: %d before, %d after the connection ended", fdsBefore, after)
	}
}
