package execserver

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The login shell is read once per version of the passwd file: an edit in
// place (new size or modification time) and a rename over it are seen.
func TestLoginShellCacheFollowsThePasswdFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "passwd")
	write := func(p, shell string) {
		t.Helper()
		if err := os.WriteFile(p, []byte("root:x:0:0:root:/root:/bin/false\nalice:x:1000:1000::/home/alice:"+shell+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var c shellCache
	write(path, "/bin/bash")
	if got := c.lookup(path, "alice"); got != "/bin/bash" {
		t.Fatalf("first lookup = %q, want /bin/bash", got)
	}
	// Same size, later modification time.
	write(path, "/bin/dash")
	later := time.Now().Add(2 * time.Second)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	if got := c.lookup(path, "alice"); got != "/bin/dash" {
		t.Fatalf("after an edit in place = %q, want /bin/dash", got)
	}
	// Another file renamed over it, with the old modification time.
	other := filepath.Join(dir, "passwd.new")
	write(other, "/bin/zsh_")
	if err := os.Chtimes(other, later, later); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other, path); err != nil {
		t.Fatal(err)
	}
	if got := c.lookup(path, "alice"); got != "/bin/zsh_" {
		t.Fatalf("after a rename over it = %q, want /bin/zsh_", got)
	}
	if got := c.lookup(path, "bob"); got != "" {
		t.Fatalf("unknown user = %q, want none", got)
	}
	if got := c.lookup(filepath.Join(dir, "missing"), "alice"); got != "" {
		t.Fatalf("missing file = %q, want none", got)
	}
}
