package fshelper_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/codexec/codex/fshelper"
	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wire"
)

func openParams(id, path string, replace bool) *wire.OpenParams {
	p := &wire.OpenParams{HandleID: id, Path: wire.Path{Native: path}}
	if replace {
		m := wire.OpenModeReplace
		p.Mode = &m
	}
	return p
}

// TestHandlesTable: the limit counts open handles, blocks read while
// other handles close read their own file, and a closed table refuses
// opens and has closed every descriptor.
func TestHandlesTable(t *testing.T) {
	dir := tempDir(t)
	path := filepath.Join(dir, "f")
	writeFile(t, path, "0123456789")
	fdsBefore := openFDs(t)
	hs := fshelper.NewHandles(nil)
	ctx := context.Background()
	for i := range wire.MaxFileHandles {
		if err := hs.Open(ctx, openParams(fmt.Sprint(i), path, false)); err != nil {
			t.Fatal(err)
		}
	}
	var we *rpc.Error
	if err := hs.Open(ctx, openParams("more", path, false)); !errors.As(err, &we) || we.Message != "at most 128 file handles may be open per connection" {
		t.Fatalf("open beyond the limit: %v", err)
	}
	if n := hs.Len(); n != wire.MaxFileHandles {
		t.Fatalf("Len %d", n)
	}
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprint(i)
			for range 50 {
				data, _, release, err := hs.ReadBlock(id, 2, 3)
				if err != nil || string(data) != "234" {
					t.Errorf("handle %s: %q, %v", id, data, err)
				}
				release()
			}
			hs.CloseHandle(id)
		}()
	}
	wg.Wait()
	if n := hs.Len(); n != wire.MaxFileHandles-16 {
		t.Fatalf("Len %d after 16 closes", n)
	}
	hs.Close()
	if err := hs.Open(ctx, openParams("late", path, true)); err == nil {
		t.Fatal("a closed table opened a handle")
	}
	if got := openFDs(t); got > fdsBefore {
		t.Fatalf("%d descriptors open after Close, %d before", got, fdsBefore)
	}
}
