package fshelper_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/codexec/codex/fshelper"
	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wire"
)

const (
	msgNotFound  = "No such file or directory (os error 2)"
	msgNotDir    = "Not a directory (os error 20)"
	msgExists    = "File exists (os error 17)"
	msgNotEmpty  = "Directory not empty (os error 39)"
	msgSymlink   = "path contains a symbolic link"
	msgTooLarge  = "file is too large to read: limit is 536870912 bytes"
	helloBase64  = "aGVsbG8=" // "hello"
	codeNotFound = wire.CodeNotFound
	codeInvalid  = rpc.CodeInvalidRequest
	codeInternal = rpc.CodeInternalError
)

func TestReadFile(t *testing.T) {
	runWireCases(t, fixture, []wireCase{
		{name: "uri", method: "fs/readFile", params: `{"path":"$URI/file.txt","sandbox":null}`,
			want: `{"dataBase64":"aGVsbG8="}`},
		{name: "plain path", method: "fs/readFile", params: `{"path":"$ROOT/file.txt"}`,
			want: `{"dataBase64":"aGVsbG8="}`},
		{name: "empty file", method: "fs/readFile", params: `{"path":"$URI/empty.txt"}`,
			want: `{"dataBase64":""}`},
		{name: "through a link", method: "fs/readFile", params: `{"path":"$URI/dirlink/inner.txt","followSymlinks":true}`,
			want: `{"dataBase64":"aW5uZXI="}`},
		{name: "followSymlinks null", method: "fs/readFile", params: `{"path":"$URI/link","followSymlinks":null}`,
			want: `{"dataBase64":"aGVsbG8="}`},
		{name: "missing", method: "fs/readFile", params: `{"path":"$URI/nope.txt"}`,
			code: codeNotFound, msg: msgNotFound},
		{name: "dangling link", method: "fs/readFile", params: `{"path":"$URI/dangling"}`,
			code: codeNotFound, msg: msgNotFound},
		{name: "directory", method: "fs/readFile", params: `{"path":"$URI/dir"}`,
			code: codeInvalid, msg: "path `$ROOT/dir` is not a file"},
		{name: "fifo does not block", method: "fs/readFile", params: `{"path":"$URI/fifo"}`,
			code: codeInvalid, msg: "path `$ROOT/fifo` is not a file"},
		{name: "device", method: "fs/readFile", params: `{"path":"/dev/null"}`,
			code: codeInvalid, msg: "path `/dev/null` is not a file"},
		{name: "below a file", method: "fs/readFile", params: `{"path":"$URI/file.txt/x"}`,
			code: codeInternal, msg: msgNotDir},
		{name: "no-follow plain file", method: "fs/readFile", params: `{"path":"$URI/dir/inner.txt","followSymlinks":false}`,
			want: `{"dataBase64":"aW5uZXI="}`},
		{name: "no-follow last component", method: "fs/readFile", params: `{"path":"$URI/link","followSymlinks":false}`,
			code: codeInvalid, msg: msgSymlink},
		{name: "no-follow parent component", method: "fs/readFile", params: `{"path":"$URI/dirlink/inner.txt","followSymlinks":false}`,
			code: codeInvalid, msg: msgSymlink},
		{name: "no-follow dangling", method: "fs/readFile", params: `{"path":"$URI/dangling","followSymlinks":false}`,
			code: codeInvalid, msg: msgSymlink},
	})
}

func TestReadFileTooLarge(t *testing.T) {
	root := tempDir(t)
	path := filepath.Join(root, "big")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: no disk space is used.
	if err := f.Truncate(fshelper.MaxReadSize + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, werr := call(t, "fs/readFile", map[string]any{"path": wire.FileURI(path)})
	if werr == nil {
		t.Fatal("read of a too large file succeeded")
	}
	checkWireError(t, werr, codeInvalid, msgTooLarge)
	if _, err := fshelper.ReadFile(path, fshelper.Options{}); !errors.Is(err, fshelper.ErrTooLarge) {
		t.Fatalf("ReadFile: %v, want ErrTooLarge", err)
	}
}

func TestReadFilePermissionDenied(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads files whatever their mode")
	}
	root := tempDir(t)
	path := filepath.Join(root, "secret")
	writeFile(t, path, "x")
	if err := os.Chmod(path, 0); err != nil {
		t.Fatal(err)
	}
	_, werr := call(t, "fs/readFile", map[string]any{"path": path})
	if werr == nil {
		t.Fatal("read of an unreadable file succeeded")
	}
	checkWireError(t, werr, codeInvalid, "Permission denied (os error 13)")
}

func TestWriteFile(t *testing.T) {
	runWireCases(t, fixture, []wireCase{
		{name: "create", method: "fs/writeFile", params: `{"path":"$URI/new.txt","dataBase64":"YWxwaGEK","sandbox":null}`,
			want: `{}`, check: func(t *testing.T, root string) { wantContent(t, filepath.Join(root, "new.txt"), "alpha\n") }},
		{name: "truncate", method: "fs/writeFile", params: `{"path":"$ROOT/file.txt","dataBase64":"aGk="}`,
			want: `{}`, check: func(t *testing.T, root string) { wantContent(t, filepath.Join(root, "file.txt"), "hi") }},
		{name: "empty data", method: "fs/writeFile", params: `{"path":"$URI/file.txt","dataBase64":""}`,
			want: `{}`, check: func(t *testing.T, root string) { wantContent(t, filepath.Join(root, "file.txt"), "") }},
		{name: "through a link", method: "fs/writeFile", params: `{"path":"$URI/link","dataBase64":"aGk="}`,
			want: `{}`, check: func(t *testing.T, root string) {
				wantContent(t, filepath.Join(root, "file.txt"), "hi")
				wantLink(t, filepath.Join(root, "link"), "file.txt")
			}},
		{name: "missing parent", method: "fs/writeFile", params: `{"path":"$URI/nodir/sub/a.txt","dataBase64":"aGk="}`,
			code: codeNotFound, msg: msgNotFound, check: rooted(wantMissing, "nodir")},
		{name: "bad base64", method: "fs/writeFile", params: `{"path":"$URI/new.txt","dataBase64":"!!!!"}`,
			code: codeInvalid, msg: "fs/writeFile requires valid base64 dataBase64: *", check: rooted(wantMissing, "new.txt")},
		{name: "unpadded base64", method: "fs/writeFile", params: `{"path":"$URI/new.txt","dataBase64":"aGk"}`,
			code: codeInvalid, msg: "fs/writeFile requires valid base64 dataBase64: *", check: rooted(wantMissing, "new.txt")},
		{name: "directory", method: "fs/writeFile", params: `{"path":"$URI/dir","dataBase64":"aGk="}`,
			code: codeInternal, msg: "Is a directory (os error 21)"},
		{name: "fifo without reader does not block", method: "fs/writeFile", params: `{"path":"$URI/fifo","dataBase64":"aGk="}`,
			code: codeInternal, msg: "No such device or address (os error 6)"},
		{name: "no-follow new file", method: "fs/writeFile", params: `{"path":"$URI/dir/new.txt","dataBase64":"aGk=","followSymlinks":false}`,
			want: `{}`, check: func(t *testing.T, root string) { wantContent(t, filepath.Join(root, "dir", "new.txt"), "hi") }},
		{name: "no-follow last component", method: "fs/writeFile", params: `{"path":"$URI/link","dataBase64":"aGk=","followSymlinks":false}`,
			code: codeInvalid, msg: msgSymlink, check: func(t *testing.T, root string) { wantContent(t, filepath.Join(root, "file.txt"), "hello") }},
		{name: "no-follow dangling", method: "fs/writeFile", params: `{"path":"$URI/dangling","dataBase64":"aGk=","followSymlinks":false}`,
			code: codeInvalid, msg: msgSymlink, check: rooted(wantMissing, "missing")},
		{name: "no-follow parent component", method: "fs/writeFile", params: `{"path":"$URI/dirlink/new.txt","dataBase64":"aGk=","followSymlinks":false}`,
			code: codeInvalid, msg: msgSymlink, check: rooted(wantMissing, "dir/new.txt")},
	})
}

func TestWriteReadBinaryRoundTrip(t *testing.T) {
	root := tempDir(t)
	data := make([]byte, 0, 1<<20+256)
	for i := range 256 {
		data = append(data, byte(i))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1 << 20 {
		data = append(data, byte(rng.UintN(256)))
	}
	for _, n := range []int{0, 1, 2, 3, 255, 256, len(data)} {
		path := wire.FileURI(filepath.Join(root, "bin"))
		mustCall(t, "fs/writeFile", map[string]any{"path": path, "dataBase64": base64.StdEncoding.EncodeToString(data[:n])})
		disk, err := os.ReadFile(filepath.Join(root, "bin"))
		if err != nil || !bytes.Equal(disk, data[:n]) {
			t.Fatalf("n=%d: bytes on disk differ (err %v)", n, err)
		}
		var res struct{ DataBase64 []byte }
		if err := json.Unmarshal([]byte(mustCall(t, "fs/readFile", map[string]any{"path": path})), &res); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(res.DataBase64, data[:n]) {
			t.Fatalf("n=%d: bytes read back differ", n)
		}
	}
}

func TestGetMetadata(t *testing.T) {
	// Times vary: the comparison blanks them and timesMatch checks them.
	// A directory's size varies by filesystem: "size":* blanks it.
	const file = `{"isDirectory":false,"isFile":true,"isSymlink":false,"size":5,"createdAtMs":0,"modifiedAtMs":0}`
	cases := []struct {
		name, path string
		follow     any // nil: absent
		want       string
		code       int
		msg        string
	}{
		{name: "file", path: "file.txt", want: file},
		{name: "directory", path: "dir", want: `{"isDirectory":true,"isFile":false,"isSymlink":false,"size":*,"createdAtMs":0,"modifiedAtMs":0}`},
		{name: "link to file", path: "link", want: `{"isDirectory":false,"isFile":true,"isSymlink":true,"size":5,"createdAtMs":0,"modifiedAtMs":0}`},
		{name: "link to directory", path: "dirlink", want: `{"isDirectory":true,"isFile":false,"isSymlink":true,"size":*,"createdAtMs":0,"modifiedAtMs":0}`},
		{name: "fifo", path: "fifo", want: `{"isDirectory":false,"isFile":false,"isSymlink":false,"size":0,"createdAtMs":0,"modifiedAtMs":0}`},
		{name: "dangling link", path: "dangling", code: codeNotFound, msg: msgNotFound},
		{name: "missing", path: "nope", code: codeNotFound, msg: msgNotFound},
		{name: "no-follow file", path: "file.txt", follow: false, want: file},
		{name: "no-follow link", path: "link", follow: false, code: codeInvalid, msg: msgSymlink},
		{name: "no-follow parent link", path: "dirlink/inner.txt", follow: false, code: codeInvalid, msg: msgSymlink},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := fixture(t)
			params := map[string]any{"path": wire.FileURI(filepath.Join(root, tc.path)), "sandbox": nil}
			if tc.follow != nil {
				params["followSymlinks"] = tc.follow
			}
			res, werr := call(t, "fs/getMetadata", params)
			if tc.code != 0 {
				if werr == nil {
					t.Fatalf("got %s, want error", res)
				}
				checkWireError(t, werr, tc.code, tc.msg)
				return
			}
			if werr != nil {
				t.Fatalf("error %d %q", werr.Code, werr.Message)
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(res), &m); err != nil {
				t.Fatal(err)
			}
			timesMatch(t, filepath.Join(root, tc.path), m)
			got := timesRE.ReplaceAllString(res, `"${1}AtMs":0`)
			if strings.Contains(tc.want, `"size":*`) {
				got = sizeRE.ReplaceAllString(got, `"size":*`)
			}
			if got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// timesRE and sizeRE blank the values that vary between runs.
var (
	timesRE = regexp.MustCompile(`"(created|modified)AtMs":\d+`)
	sizeRE  = regexp.MustCompile(`"size":\d+`)
)

// timesMatch checks modifiedAtMs against the target's mtime, and that
// createdAtMs is 0 or a plausible time not after the modification.
func timesMatch(t *testing.T, path string, m map[string]any) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := int64(m["modifiedAtMs"].(float64)), fi.ModTime().UnixMilli(); got != want {
		t.Fatalf("modifiedAtMs = %d, want %d", got, want)
	}
	if c := int64(m["createdAtMs"].(float64)); c != 0 && c > fi.ModTime().UnixMilli()+1000 {
		t.Fatalf("createdAtMs = %d after modifiedAtMs", c)
	}
}

func TestOperationsWrapErrno(t *testing.T) {
	root := fixture(t)
	missing := filepath.Join(root, "nope")
	if _, err := fshelper.ReadFile(missing, fshelper.Options{}); !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, syscall.ENOENT) {
		t.Errorf("ReadFile: %v, want ENOENT", err)
	}
	if err := fshelper.CreateDirectory(filepath.Join(root, "dir"), fshelper.CreateDirectoryOptions{}); !errors.Is(err, fs.ErrExist) {
		t.Errorf("CreateDirectory: %v, want EEXIST", err)
	}
	if err := fshelper.Remove(filepath.Join(root, "dir"), fshelper.RemoveOptions{}); !errors.Is(err, syscall.ENOTEMPTY) {
		t.Errorf("Remove: %v, want ENOTEMPTY", err)
	}
	if _, err := fshelper.ReadFile(filepath.Join(root, "dir"), fshelper.Options{}); !errors.Is(err, fshelper.ErrNotFile) {
		t.Errorf("ReadFile(dir): %v, want ErrNotFile", err)
	}
	if _, err := fshelper.GetMetadata(filepath.Join(root, "link"), fshelper.Options{NoFollowSymlinks: true}); !errors.Is(err, fshelper.ErrSymlink) {
		t.Errorf("GetMetadata: %v, want ErrSymlink", err)
	}
	if _, err := fshelper.ReadDirectory(filepath.Join(root, "file.txt")); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("ReadDirectory: %v, want ENOTDIR", err)
	}
	md, err := fshelper.GetMetadata(filepath.Join(root, "link"), fshelper.Options{})
	if err != nil || !md.IsSymlink || !md.IsFile || md.Size != 5 || md.Modified.IsZero() {
		t.Errorf("GetMetadata(link) = %+v, %v", md, err)
	}
}
