package e2e

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"
)

// TestFilesystemOverWebSocket replays the apply_patch and view_image steps
// of the real client (docs/protocol.md §9.2) with URI paths.
func TestFilesystemOverWebSocket(t *testing.T) {
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()
	dir := t.TempDir()
	uri := func(p string) string { return "file://" + filepath.Join(dir, p) }

	c.fail("fs/getMetadata", map[string]any{"path": uri(".git"), "sandbox": nil}, -32004, "No such file or directory (os error 2)")
	c.fail("fs/readFile", map[string]any{"path": uri("a.txt"), "sandbox": nil}, -32004, "No such file or directory (os error 2)")
	c.ok("fs/writeFile", map[string]any{"path": uri("a.txt"), "dataBase64": "YWxwaGEK", "sandbox": nil}, nil)
	c.fail("fs/writeFile", map[string]any{"path": uri("sub/dir/b.txt"), "dataBase64": "Ygo=", "sandbox": nil}, -32004, "No such file or directory (os error 2)")
	c.ok("fs/createDirectory", map[string]any{"path": uri("sub/dir"), "recursive": true, "sandbox": nil}, nil)
	c.ok("fs/writeFile", map[string]any{"path": uri("sub/dir/b.txt"), "dataBase64": "Ygo=", "sandbox": nil}, nil)
	c.ok("fs/remove", map[string]any{"path": uri("a.txt"), "recursive": false, "force": false, "sandbox": nil}, nil)
	if _, err := os.Stat(filepath.Join(dir, "a.txt")); !os.IsNotExist(err) {
		t.Fatalf("a.txt still there: %v", err)
	}
	png := []byte{0x89, 'P', 'N', 'G', 0, 1, 2, 0xff, 0xfe}
	_ = os.WriteFile(filepath.Join(dir, "i.png"), png, 0o644)
	var rf map[string]string
	c.ok("fs/readFile", map[string]any{"path": uri("i.png"), "sandbox": nil}, &rf)
	if rf["dataBase64"] != base64.StdEncoding.EncodeToString(png) {
		t.Fatalf("binary read %v", rf)
	}
	var md map[string]any
	c.ok("fs/getMetadata", map[string]any{"path": filepath.Join(dir, "sub"), "sandbox": nil}, &md)
	if md["isDirectory"] != true || md["isFile"] != false {
		t.Fatalf("metadata %v", md)
	}
	c.fail("fs/readFile", map[string]any{"path": "rel/x"}, -32602, "invalid URI: relative URL without a base")
}
