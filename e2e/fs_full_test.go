package e2e

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestWriteFileOnFullFilesystem writes 2 MiB over an existing file on a
// 1 MiB tmpfs, directly and through the sandboxed fs helper, and then
// copies a 2 MiB file over it: each call fails with ENOSPC, the old
// content is intact and no temporary file is left.
func TestWriteFileOnFullFilesystem(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=1m,mode=0755"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()
	path := filepath.Join(dir, "f.bin")
	old := bytes.Repeat([]byte("old content\n"), 50_000) // ~600 KB
	if err := os.WriteFile(path, old, 0o644); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte{0xa5}, 2<<20)
	bigSrc := filepath.Join(t.TempDir(), "big.bin")
	if err := os.WriteFile(bigSrc, big, 0o644); err != nil {
		t.Fatal(err)
	}
	check := func(t *testing.T) {
		t.Helper()
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, old) {
			t.Fatalf("old content lost: %d bytes, err %v", len(got), err)
		}
		ents, _ := os.ReadDir(dir)
		if len(ents) != 1 {
			t.Fatalf("directory after the failed write has %d entries", len(ents))
		}
	}
	data := base64.StdEncoding.EncodeToString(big)
	for _, tc := range []struct {
		name string
		sb   any
	}{{"direct", nil}, {"sandboxed helper", workspaceSandbox(dir, "restricted")}} {
		t.Run(tc.name, func(t *testing.T) {
			c.fail("fs/writeFile", map[string]any{"path": "file://" + path, "dataBase64": data, "sandbox": tc.sb}, -32603, "No space left on device (os error 28)")
			check(t)
			c.fail("fs/copy", map[string]any{"sourcePath": "file://" + bigSrc, "destinationPath": "file://" + path, "recursive": false, "sandbox": tc.sb}, -32603, "No space left on device (os error 28)")
			check(t)
		})
	}
}

// TestSandboxedReadFileLarge reads a 5 MiB file through the sandboxed fs
// helper, whose response is forwarded in pieces, and a missing one.
func TestSandboxedReadFileLarge(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()
	root := t.TempDir()
	data := make([]byte, 5<<20+3)
	for i := range data {
		data[i] = byte(i*131 + i>>9)
	}
	path := filepath.Join(root, "big.bin")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	sb := workspaceSandbox(root, "restricted")
	var res struct {
		DataBase64 string `json:"dataBase64"`
	}
	c.ok("fs/readFile", map[string]any{"path": "file://" + path, "sandbox": sb}, &res)
	if got, err := base64.StdEncoding.DecodeString(res.DataBase64); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("sandboxed read: %d bytes, err %v", len(got), err)
	}
	c.fail("fs/readFile", map[string]any{"path": "file://" + filepath.Join(root, "missing"), "sandbox": sb}, -32004, "No such file or directory (os error 2)")
}
