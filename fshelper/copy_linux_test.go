package fshelper_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

const (
	msgCopyRecursive   = "fs/copy requires recursive: true when sourcePath is a directory"
	msgCopyIntoSelf    = "fs/copy cannot copy a directory to itself or one of its descendants"
	msgCopyUnsupported = "fs/copy only supports regular files, directories, and symlinks"
)

// copyFixture is fixture plus a tree to copy:
//
//	tree/a.txt        "a", mode 0640
//	tree/sub/b.txt    "b"
//	tree/sub/rel  ->  ../a.txt
//	tree/dangling ->  nowhere
//	tree/fifo         a FIFO (skipped by a recursive copy)
func copyFixture(t *testing.T) string {
	t.Helper()
	root := fixture(t)
	tree := filepath.Join(root, "tree")
	mkdir(t, filepath.Join(tree, "sub"))
	writeFile(t, filepath.Join(tree, "a.txt"), "a")
	if err := os.Chmod(filepath.Join(tree, "a.txt"), 0o640); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(tree, "sub", "b.txt"), "b")
	symlink(t, "../a.txt", filepath.Join(tree, "sub", "rel"))
	symlink(t, "nowhere", filepath.Join(tree, "dangling"))
	if err := syscall.Mkfifo(filepath.Join(tree, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

func wantMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode() != want {
		t.Fatalf("%s mode %v, want %v", path, fi.Mode(), want)
	}
}

func wantCopiedTree(dst string) func(t *testing.T, root string) {
	return func(t *testing.T, root string) {
		t.Helper()
		d := filepath.Join(root, dst)
		wantContent(t, filepath.Join(d, "a.txt"), "a")
		wantMode(t, filepath.Join(d, "a.txt"), 0o640)
		wantContent(t, filepath.Join(d, "sub", "b.txt"), "b")
		wantLink(t, filepath.Join(d, "sub", "rel"), "../a.txt")
		wantLink(t, filepath.Join(d, "dangling"), "nowhere")
		wantMissing(t, filepath.Join(d, "fifo"))
	}
}

func TestCopy(t *testing.T) {
	runWireCases(t, copyFixture, []wireCase{
		{name: "file", method: "fs/copy", params: `{"sourcePath":"$URI/tree/a.txt","destinationPath":"$URI/c.txt","recursive":false,"sandbox":null}`,
			want: `{}`, check: func(t *testing.T, root string) {
				wantContent(t, filepath.Join(root, "c.txt"), "a")
				wantMode(t, filepath.Join(root, "c.txt"), 0o640)
			}},
		{name: "file over a file", method: "fs/copy", params: `{"sourcePath":"$ROOT/empty.txt","destinationPath":"$ROOT/file.txt","recursive":true}`,
			want: `{}`, check: func(t *testing.T, root string) { wantContent(t, filepath.Join(root, "file.txt"), "") }},
		{name: "file onto itself", method: "fs/copy", params: `{"sourcePath":"$URI/file.txt","destinationPath":"$URI/file.txt","recursive":false}`,
			want: `{}`, check: func(t *testing.T, root string) { wantContent(t, filepath.Join(root, "file.txt"), "hello") }},
		{name: "file onto itself through a link", method: "fs/copy", params: `{"sourcePath":"$URI/file.txt","destinationPath":"$URI/link","recursive":false}`,
			want: `{}`, check: func(t *testing.T, root string) { wantContent(t, filepath.Join(root, "file.txt"), "hello") }},
		{name: "file into a missing directory", method: "fs/copy", params: `{"sourcePath":"$URI/file.txt","destinationPath":"$URI/nodir/c.txt","recursive":false}`,
			code: codeNotFound, msg: msgNotFound, check: rooted(wantMissing, "nodir")},
		{name: "link is recreated", method: "fs/copy", params: `{"sourcePath":"$URI/link","destinationPath":"$URI/link2","recursive":false}`,
			want: `{}`, check: func(t *testing.T, root string) { wantLink(t, filepath.Join(root, "link2"), "file.txt") }},
		{name: "dangling link is recreated", method: "fs/copy", params: `{"sourcePath":"$URI/dangling","destinationPath":"$URI/d2","recursive":false}`,
			want: `{}`, check: func(t *testing.T, root string) { wantLink(t, filepath.Join(root, "d2"), "missing") }},
		{name: "directory link is recreated", method: "fs/copy", params: `{"sourcePath":"$URI/dirlink","destinationPath":"$URI/dl2","recursive":true}`,
			want: `{}`, check: func(t *testing.T, root string) { wantLink(t, filepath.Join(root, "dl2"), "dir") }},
		{name: "link over an existing path", method: "fs/copy", params: `{"sourcePath":"$URI/link","destinationPath":"$URI/empty.txt","recursive":false}`,
			code: codeInternal, msg: msgExists},
		{name: "directory without recursive", method: "fs/copy", params: `{"sourcePath":"$URI/tree","destinationPath":"$URI/t2","recursive":false}`,
			code: codeInvalid, msg: msgCopyRecursive, check: rooted(wantMissing, "t2")},
		{name: "directory", method: "fs/copy", params: `{"sourcePath":"$URI/tree","destinationPath":"$URI/t2","recursive":true}`,
			want: `{}`, check: wantCopiedTree("t2")},
		{name: "directory with missing parents", method: "fs/copy", params: `{"sourcePath":"$URI/tree","destinationPath":"$URI/x/y/t2","recursive":true}`,
			want: `{}`, check: wantCopiedTree("x/y/t2")},
		{name: "directory into an existing directory", method: "fs/copy", params: `{"sourcePath":"$URI/tree","destinationPath":"$URI/empty","recursive":true}`,
			want: `{}`, check: wantCopiedTree("empty")},
		{name: "directory to itself", method: "fs/copy", params: `{"sourcePath":"$URI/tree","destinationPath":"$URI/tree","recursive":true}`,
			code: codeInvalid, msg: msgCopyIntoSelf},
		{name: "directory into a descendant", method: "fs/copy", params: `{"sourcePath":"$URI/tree","destinationPath":"$URI/tree/sub/new/copy","recursive":true}`,
			code: codeInvalid, msg: msgCopyIntoSelf, check: rooted(wantMissing, "tree/sub/new")},
		{name: "directory into a descendant through a link", method: "fs/copy", params: `{"sourcePath":"$URI/dir","destinationPath":"$URI/dirlink/copy","recursive":true}`,
			code: codeInvalid, msg: msgCopyIntoSelf, check: rooted(wantMissing, "dir/copy")},
		{name: "directory to a sibling with a common prefix", method: "fs/copy", params: `{"sourcePath":"$URI/dir","destinationPath":"$URI/dir2","recursive":true}`,
			want: `{}`, check: func(t *testing.T, root string) { wantContent(t, filepath.Join(root, "dir2", "inner.txt"), "inner") }},
		{name: "fifo source does not block", method: "fs/copy", params: `{"sourcePath":"$URI/fifo","destinationPath":"$URI/f2","recursive":false}`,
			code: codeInvalid, msg: msgCopyUnsupported, check: rooted(wantMissing, "f2")},
		{name: "device source", method: "fs/copy", params: `{"sourcePath":"/dev/null","destinationPath":"$URI/null","recursive":false}`,
			code: codeInvalid, msg: msgCopyUnsupported, check: rooted(wantMissing, "null")},
		{name: "missing source", method: "fs/copy", params: `{"sourcePath":"$URI/nope","destinationPath":"$URI/n2","recursive":false}`,
			code: codeNotFound, msg: msgNotFound},
		{name: "file onto a fifo without reader does not block", method: "fs/copy", params: `{"sourcePath":"$URI/file.txt","destinationPath":"$URI/fifo","recursive":false}`,
			code: codeInternal, msg: "No such device or address (os error 6)"},
	})
}

func TestCanonicalize(t *testing.T) {
	runWireCases(t, func(t *testing.T) string {
		root := fixture(t)
		mkdir(t, filepath.Join(root, "with space", "ü"))
		symlink(t, "with space/ü", filepath.Join(root, "odd"))
		return root
	}, []wireCase{
		{name: "uri in, uri out", method: "fs/canonicalize", params: `{"path":"$URI/dirlink/inner.txt","sandbox":null}`,
			want: `{"path":"$URI/dir/inner.txt"}`},
		{name: "plain in, plain out", method: "fs/canonicalize", params: `{"path":"$ROOT/dirlink/inner.txt"}`,
			want: `{"path":"$ROOT/dir/inner.txt"}`},
		{name: "uri is percent-encoded", method: "fs/canonicalize", params: `{"path":"$URI/odd"}`,
			want: `{"path":"$URI/with%20space/%C3%BC"}`},
		{name: "plain is not encoded", method: "fs/canonicalize", params: `{"path":"$ROOT/odd"}`,
			want: `{"path":"$ROOT/with space/ü"}`},
		{name: "dot segments", method: "fs/canonicalize", params: `{"path":"$URI/dir/./../link"}`,
			want: `{"path":"$URI/file.txt"}`},
		{name: "root", method: "fs/canonicalize", params: `{"path":"file:///"}`,
			want: `{"path":"file:///"}`},
		{name: "missing", method: "fs/canonicalize", params: `{"path":"$URI/nope"}`,
			code: codeNotFound, msg: msgNotFound},
		{name: "dangling link", method: "fs/canonicalize", params: `{"path":"$URI/dangling"}`,
			code: codeNotFound, msg: msgNotFound},
		{name: "below a file", method: "fs/canonicalize", params: `{"path":"$URI/file.txt/x"}`,
			code: codeInternal, msg: msgNotDir},
	})
}
