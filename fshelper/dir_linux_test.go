package fshelper_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/codexec/codex/fshelper"
	"github.com/codexec/codex/wire"
)

func wantDir(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil || !fi.IsDir() {
		t.Fatalf("%s is not a directory (%v)", path, err)
	}
}

func TestCreateDirectory(t *testing.T) {
	runWireCases(t, fixture, []wireCase{
		{name: "recursive by default", method: "fs/createDirectory", params: `{"path":"$URI/a/b/c","sandbox":null}`,
			want: `{}`, check: rooted(wantDir, "a/b/c")},
		{name: "recursive existing directory", method: "fs/createDirectory", params: `{"path":"$URI/dir","recursive":true}`,
			want: `{}`, check: rooted(wantDir, "dir")},
		{name: "recursive existing file", method: "fs/createDirectory", params: `{"path":"$URI/file.txt","recursive":true}`,
			code: codeInternal, msg: msgExists},
		{name: "recursive below a file", method: "fs/createDirectory", params: `{"path":"$URI/file.txt/x","recursive":true}`,
			code: codeInternal, msg: msgNotDir},
		{name: "recursive through a link", method: "fs/createDirectory", params: `{"path":"$URI/dirlink/sub/x"}`,
			want: `{}`, check: rooted(wantDir, "dir/sub/x")},
		{name: "recursive root", method: "fs/createDirectory", params: `{"path":"file:///"}`,
			want: `{}`},
		{name: "non-recursive", method: "fs/createDirectory", params: `{"path":"$ROOT/new","recursive":false}`,
			want: `{}`, check: rooted(wantDir, "new")},
		{name: "non-recursive missing parent", method: "fs/createDirectory", params: `{"path":"$URI/a/b","recursive":false}`,
			code: codeNotFound, msg: msgNotFound, check: rooted(wantMissing, "a")},
		{name: "non-recursive existing", method: "fs/createDirectory", params: `{"path":"$URI/dir","recursive":false}`,
			code: codeInternal, msg: msgExists},
		{name: "non-recursive existing file", method: "fs/createDirectory", params: `{"path":"$URI/file.txt","recursive":false}`,
			code: codeInternal, msg: msgExists},
		{name: "no-follow recursive", method: "fs/createDirectory", params: `{"path":"$URI/dir/x/y","followSymlinks":false}`,
			want: `{}`, check: rooted(wantDir, "dir/x/y")},
		{name: "no-follow recursive existing", method: "fs/createDirectory", params: `{"path":"$URI/dir","followSymlinks":false}`,
			want: `{}`},
		{name: "no-follow recursive existing file", method: "fs/createDirectory", params: `{"path":"$URI/file.txt","followSymlinks":false}`,
			code: codeInternal, msg: msgExists},
		{name: "no-follow recursive below a file", method: "fs/createDirectory", params: `{"path":"$URI/file.txt/x","followSymlinks":false}`,
			code: codeInternal, msg: msgNotDir},
		{name: "no-follow recursive through a link", method: "fs/createDirectory", params: `{"path":"$URI/dirlink/x/y","followSymlinks":false}`,
			code: codeInvalid, msg: msgSymlink, check: rooted(wantMissing, "dir/x")},
		{name: "no-follow recursive at a link", method: "fs/createDirectory", params: `{"path":"$URI/dirlink","followSymlinks":false}`,
			code: codeInvalid, msg: msgSymlink},
		{name: "no-follow non-recursive", method: "fs/createDirectory", params: `{"path":"$URI/dir/x","recursive":false,"followSymlinks":false}`,
			want: `{}`, check: rooted(wantDir, "dir/x")},
		{name: "no-follow non-recursive through a link", method: "fs/createDirectory", params: `{"path":"$URI/dirlink/x","recursive":false,"followSymlinks":false}`,
			code: codeInvalid, msg: msgSymlink, check: rooted(wantMissing, "dir/x")},
		{name: "no-follow non-recursive at a link", method: "fs/createDirectory", params: `{"path":"$URI/dangling","recursive":false,"followSymlinks":false}`,
			code: codeInvalid, msg: msgSymlink, check: rooted(wantMissing, "missing")},
		{name: "no-follow non-recursive missing parent", method: "fs/createDirectory", params: `{"path":"$URI/a/b","recursive":false,"followSymlinks":false}`,
			code: codeNotFound, msg: msgNotFound},
	})
}

func TestReadDirectory(t *testing.T) {
	runWireCases(t, fixture, []wireCase{
		{name: "empty", method: "fs/readDirectory", params: `{"path":"$URI/empty","sandbox":null}`,
			want: `{"entries":[]}`},
		{name: "one entry", method: "fs/readDirectory", params: `{"path":"$URI/dir"}`,
			want: `{"entries":[{"fileName":"inner.txt","isDirectory":false,"isFile":true}]}`},
		{name: "through a link", method: "fs/readDirectory", params: `{"path":"$ROOT/dirlink"}`,
			want: `{"entries":[{"fileName":"inner.txt","isDirectory":false,"isFile":true}]}`},
		{name: "file", method: "fs/readDirectory", params: `{"path":"$URI/file.txt"}`,
			code: codeInternal, msg: msgNotDir},
		{name: "fifo does not block", method: "fs/readDirectory", params: `{"path":"$URI/fifo"}`,
			code: codeInternal, msg: msgNotDir},
		{name: "missing", method: "fs/readDirectory", params: `{"path":"$URI/nope"}`,
			code: codeNotFound, msg: msgNotFound},
	})
}

func TestReadDirectoryEntryTypes(t *testing.T) {
	root := fixture(t)
	res := mustCall(t, "fs/readDirectory", map[string]any{"path": wire.FileURI(root)})
	var got struct {
		Entries []struct {
			FileName    string `json:"fileName"`
			IsDirectory bool   `json:"isDirectory"`
			IsFile      bool   `json:"isFile"`
		} `json:"entries"`
	}
	if err := json.Unmarshal([]byte(res), &got); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, e := range got.Entries {
		lines = append(lines, e.FileName+" dir="+strconv.FormatBool(e.IsDirectory)+" file="+strconv.FormatBool(e.IsFile))
	}
	slices.Sort(lines) // the OS order is unspecified
	want := []string{
		"dir dir=true file=false",
		"dirlink dir=true file=false", // the target's type
		"empty dir=true file=false",
		"empty.txt dir=false file=true",
		"fifo dir=false file=false",
		"file.txt dir=false file=true",
		"link dir=false file=true",
		// "dangling" is omitted.
	}
	if !slices.Equal(lines, want) {
		t.Fatalf("entries\n got %s\nwant %s", strings.Join(lines, "; "), strings.Join(want, "; "))
	}
}

func TestReadDirectoryTooManyEntries(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 50 001 entries")
	}
	root := tempDir(t)
	for i := range fshelper.MaxDirectoryEntries {
		symlink(t, "x", filepath.Join(root, strconv.Itoa(i)))
	}
	if _, err := fshelper.ReadDirectory(root); err != nil {
		t.Fatalf("at the limit: %v", err)
	}
	symlink(t, "x", filepath.Join(root, "one-more"))
	_, werr := call(t, "fs/readDirectory", map[string]any{"path": root})
	if werr == nil {
		t.Fatal("listing above the limit succeeded")
	}
	checkWireError(t, werr, codeInternal, "directory has too many entries: limit is 50000 entries")
}

func TestRemove(t *testing.T) {
	runWireCases(t, fixture, []wireCase{
		{name: "file", method: "fs/remove", params: `{"path":"$URI/file.txt","recursive":false,"force":false,"sandbox":null}`,
			want: `{}`, check: rooted(wantMissing, "file.txt")},
		{name: "directory recursive by default", method: "fs/remove", params: `{"path":"$URI/dir"}`,
			want: `{}`, check: rooted(wantMissing, "dir")},
		{name: "missing with force by default", method: "fs/remove", params: `{"path":"$URI/nope"}`,
			want: `{}`},
		{name: "missing parent with force", method: "fs/remove", params: `{"path":"$URI/nope/x","force":true}`,
			want: `{}`},
		{name: "missing without force", method: "fs/remove", params: `{"path":"$URI/nope","force":false}`,
			code: codeNotFound, msg: msgNotFound},
		{name: "non-empty without recursive", method: "fs/remove", params: `{"path":"$URI/dir","recursive":false}`,
			code: codeInternal, msg: msgNotEmpty, check: rooted(wantExists, "dir/inner.txt")},
		{name: "empty without recursive", method: "fs/remove", params: `{"path":"$URI/empty","recursive":false}`,
			want: `{}`, check: rooted(wantMissing, "empty")},
		{name: "link, not its target", method: "fs/remove", params: `{"path":"$URI/link"}`,
			want: `{}`, check: func(t *testing.T, root string) {
				wantMissing(t, filepath.Join(root, "link"))
				wantContent(t, filepath.Join(root, "file.txt"), "hello")
			}},
		{name: "directory link, not its contents", method: "fs/remove", params: `{"path":"$URI/dirlink","recursive":true}`,
			want: `{}`, check: func(t *testing.T, root string) {
				wantMissing(t, filepath.Join(root, "dirlink"))
				wantContent(t, filepath.Join(root, "dir", "inner.txt"), "inner")
			}},
		{name: "dangling link", method: "fs/remove", params: `{"path":"$URI/dangling","force":false}`,
			want: `{}`, check: rooted(wantMissing, "dangling")},
		{name: "fifo", method: "fs/remove", params: `{"path":"$URI/fifo","force":false}`,
			want: `{}`, check: rooted(wantMissing, "fifo")},
		{name: "no-follow file", method: "fs/remove", params: `{"path":"$URI/dir/inner.txt","followSymlinks":false}`,
			want: `{}`, check: rooted(wantMissing, "dir/inner.txt")},
		{name: "no-follow link", method: "fs/remove", params: `{"path":"$URI/link","followSymlinks":false}`,
			code: codeInvalid, msg: msgSymlink, check: rooted(wantExists, "link")},
		{name: "no-follow parent link", method: "fs/remove", params: `{"path":"$URI/dirlink/inner.txt","followSymlinks":false}`,
			code: codeInvalid, msg: msgSymlink, check: rooted(wantExists, "dir/inner.txt")},
		{name: "no-follow missing without force", method: "fs/remove", params: `{"path":"$URI/nope/x","force":false,"followSymlinks":false}`,
			code: codeNotFound, msg: msgNotFound},
		{name: "no-follow missing with force", method: "fs/remove", params: `{"path":"$URI/nope/x","followSymlinks":false}`,
			want: `{}`},
	})
}

func TestRemoveRecursiveDoesNotFollowLinks(t *testing.T) {
	root := fixture(t)
	tree := filepath.Join(root, "tree")
	mkdir(t, filepath.Join(tree, "a", "b", "c"))
	writeFile(t, filepath.Join(tree, "a", "b", "c", "f"), "x")
	symlink(t, filepath.Join(root, "dir"), filepath.Join(tree, "a", "out"))
	symlink(t, filepath.Join(root, "file.txt"), filepath.Join(tree, "a", "b", "outfile"))
	for i := range 2500 { // more than one read batch
		writeFile(t, filepath.Join(tree, "a", "n"+strconv.Itoa(i)), "")
	}
	mustCall(t, "fs/remove", map[string]any{"path": wire.FileURI(tree), "recursive": true, "force": false})
	wantMissing(t, tree)
	wantContent(t, filepath.Join(root, "dir", "inner.txt"), "inner")
	wantContent(t, filepath.Join(root, "file.txt"), "hello")
}

// TestPermissionError uses procfs, where unlinking fails even for root, to
// check that EPERM/EACCES reach the wire as -32600.
func TestPermissionError(t *testing.T) {
	if _, err := os.Lstat("/proc/self/status"); err != nil {
		t.Skip("no procfs")
	}
	_, werr := call(t, "fs/remove", `{"path":"file:///proc/self/status","force":false}`)
	if werr == nil {
		t.Fatal("removing a procfs file succeeded")
	}
	if werr.Code != codeInvalid || (werr.Message != "Operation not permitted (os error 1)" && werr.Message != "Permission denied (os error 13)") {
		t.Fatalf("got %d %q, want -32600 EPERM or EACCES", werr.Code, werr.Message)
	}
}
