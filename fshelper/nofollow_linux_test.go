package fshelper_test

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/codexec/codex/fshelper"
)

func TestWalkDirNoFollow(t *testing.T) {
	root := fixture(t)
	cases := []struct {
		name, dir string
		want      error // nil: success
	}{
		{"root", "/", nil},
		{"directory", filepath.Join(root, "dir"), nil},
		{"link last", filepath.Join(root, "dirlink"), fshelper.ErrSymlink},
		{"link in the middle", filepath.Join(root, "dirlink", "x"), fshelper.ErrSymlink},
		{"missing", filepath.Join(root, "nope", "x"), syscall.ENOENT},
		{"file", filepath.Join(root, "file.txt"), syscall.ENOTDIR},
		{"below a file", filepath.Join(root, "file.txt", "x"), syscall.ENOTDIR},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := fshelper.WalkDirNoFollow(tc.dir)
			if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("WalkDirNoFollow(%s) = %v, want %v", tc.dir, err, tc.want)
			}
		})
	}
}

// TestNoFollowEveryComponent checks, for each method with followSymlinks,
// that a link as any component of the path is refused and changes nothing.
func TestNoFollowEveryComponent(t *testing.T) {
	methods := []struct{ method, extra string }{
		{"fs/readFile", ``},
		{"fs/writeFile", `,"dataBase64":"aGk="`},
		{"fs/createDirectory", `,"recursive":true`},
		{"fs/createDirectory", `,"recursive":false`},
		{"fs/getMetadata", ``},
		{"fs/remove", `,"force":true`},
	}
	root := fixture(t)
	mkdir(t, filepath.Join(root, "dir", "a", "b"))
	writeFile(t, filepath.Join(root, "dir", "a", "b", "f"), "x")
	// A link as an upper, the lowest parent, and the last component.
	symlink(t, "b", filepath.Join(root, "dir", "a", "blink"))
	symlink(t, "f", filepath.Join(root, "dir", "a", "b", "flink"))
	for _, rel := range []string{"dirlink/a/b/f", "dir/a/blink/f", "dir/a/b/flink"} {
		for _, m := range methods {
			t.Run(m.method+m.extra+" "+rel, func(t *testing.T) {
				params := `{"path":"` + filepath.Join(root, rel) + `","followSymlinks":false` + m.extra + `}`
				_, werr := call(t, m.method, params)
				if werr == nil {
					t.Fatalf("%s %s succeeded", m.method, params)
				}
				checkWireError(t, werr, codeInvalid, msgSymlink)
				wantContent(t, filepath.Join(root, "dir", "a", "b", "f"), "x")
			})
		}
	}
}
