package fshelper_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/codexec/codex/fshelper"
	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wire"
)

// TestWalkLargeDirectoryBudgets walks one directory of 3000 files with
// dangling links between them, with budgets below, at and above its size.
// Only the smallest budget+1 names are kept while the directory is read
// (the rest is trimmed as it comes, in batches), so this holds the
// trimming to the plain answer: the first budget names in byte order,
// dangling links neither listed nor counted, truncated exactly when a
// counted name is left.
func TestWalkLargeDirectoryBudgets(t *testing.T) {
	dir := t.TempDir()
	var names []string
	for i := range 3000 {
		// Written in an order unlike the sorted one.
		name := fmt.Sprintf("f%04d", (i*7919)%3000)
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
		if i%10 == 0 {
			if err := os.Symlink("nowhere", filepath.Join(dir, name+"-dangling")); err != nil {
				t.Fatal(err)
			}
		}
	}
	slices.Sort(names)
	for _, budget := range []uint64{1, 2, 7, 1023, 1024, 1025, 2999, 3000, 3001, 50000} {
		res, err := fshelper.Walk(dir, fshelper.WalkOptions{MaxDepth: 1, MaxDirectories: 1, MaxEntries: budget})
		if err != nil {
			t.Fatal(err)
		}
		n := min(int(budget), len(names))
		var got []string
		for _, e := range res.Entries {
			got = append(got, strings.TrimPrefix(e.Path, dir+"/"))
		}
		if !slices.Equal(got, names[:n]) || res.Truncated != (int(budget) < len(names)) || len(res.Errors) != 0 {
			t.Errorf("budget %d: %d entries (first %q), truncated %v, errors %v; want the first %d, truncated %v",
				budget, len(got), got[:min(len(got), 3)], res.Truncated, res.Errors, n, int(budget) < len(names))
		}
	}
}

// TestWalkNamesAsTheyAre: [ours] a name with a tab, a newline or a
// carriage return, or one that is not UTF-8, is listed under its own path.
// The reference turns the name into text lossily (U+FFFD) and drops tabs
// and line breaks from it, then reports the resulting path, which does not
// exist, as an errors item (e2e/testdata/walk_record.py's comment);
// "cr\r" would even be reported as a file "cr" that may be another one.
func TestWalkNamesAsTheyAre(t *testing.T) {
	dir := t.TempDir()
	odd := []string{"bad\xff", "cr\r", "mid\tdle", "nl\n"}
	for _, n := range odd {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h := fshelper.GatedHandlers(nil, func() error { return nil })[wire.MethodFSWalk]
	params, _ := json.Marshal(map[string]any{"path": wire.FileURI(dir), "options": map[string]any{
		"maxDepth": 0, "maxDirectories": 1, "maxEntries": 10, "followDirectorySymlinks": false}})
	res, err := h(t.Context(), &rpc.Request{Method: wire.MethodFSWalk, Params: params})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	want := `{"entries":[`
	for i, n := range []string{"bad%FF", "cr%0D", "mid%09dle", "nl%0A"} {
		if i > 0 {
			want += ","
		}
		want += `{"path":"` + wire.FileURI(dir) + "/" + n + `","kind":"file"}`
	}
	want += `],"errors":[],"truncated":false}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	for _, e := range res.(wire.WalkResult).Entries {
		if _, err := os.Lstat(e.Path.Native); err != nil {
			t.Errorf("listed path %q: %v", e.Path.Native, err)
		}
	}
}

// TestWalkGateAfterDecoding: the handshake is checked after the params
// decoded and before the budgets, as in the reference.
func TestWalkGateAfterDecoding(t *testing.T) {
	gate := &rpc.Error{Code: rpc.CodeInvalidRequest, Message: "client must call initialize before using filesystem methods"}
	h := fshelper.GatedHandlers(nil, func() error { return gate })[wire.MethodFSWalk]
	for params, want := range map[string]string{
		`{"path":"file:///"}`: "missing field `options`",
		`{"path":"file:///","options":{"maxDepth":0,"maxDirectories":0,"maxEntries":1,"followDirectorySymlinks":false}}`:            gate.Message,
		`{"path":"file:///nonexistent","options":{"maxDepth":0,"maxDirectories":1,"maxEntries":1,"followDirectorySymlinks":false}}`: gate.Message,
	} {
		_, err := h(t.Context(), &rpc.Request{Method: wire.MethodFSWalk, Params: json.RawMessage(params)})
		if err == nil || rpc.ToWire(err).Message != want {
			t.Errorf("%s: %v, want %s", params, err, want)
		}
	}
}

// BenchmarkWalkAnswer is one fs/walk of 20,000 entries (20 folders of 999
// files), from the handler to the encoded answer.
func BenchmarkWalkAnswer(b *testing.B) {
	root := b.TempDir()
	for d := range 20 {
		sub := filepath.Join(root, fmt.Sprintf("dir%02d", d))
		if err := os.Mkdir(sub, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 999 {
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("file%03d.txt", f)), nil, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	h := fshelper.GatedHandlers(nil, func() error { return nil })[wire.MethodFSWalk]
	params, _ := json.Marshal(map[string]any{"path": wire.FileURI(root), "options": map[string]any{
		"maxDepth": 64, "maxDirectories": 10000, "maxEntries": 50000, "followDirectorySymlinks": false}})
	b.ResetTimer()
	for range b.N {
		res, err := h(b.Context(), &rpc.Request{Method: wire.MethodFSWalk, Params: params})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := json.Marshal(res); err != nil {
			b.Fatal(err)
		}
	}
}
