//go:build linux

package proc

import (
	"os"
	"testing"

	"github.com/codexec/codex/internal/fsat"
)

// TestRecordsStayBounded: a long-lived server's record (in /run, a tmpfs:
// memory) must not grow with every run it ever made, only with the
// placeholders held now. 20000 runs of 3 placeholders, each let go, one
// placeholder held throughout (a long sandboxed session), leave a small
// record that still lists the held one.
func TestRecordsStayBounded(t *testing.T) {
	r, err := createRecords(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer r.close(false)
	parent := fsat.ID{Dev: 1, Ino: 2}
	r.add(1, "/work/long", parent, ".git", fsat.ID{Dev: 1, Ino: 3})
	tok := uint64(2)
	for run := 0; run < 20000; run++ {
		for _, n := range []string{".git", ".agents", ".codex"} {
			r.add(tok, "/work/some/workspace/of/a/run", parent, n, fsat.ID{Dev: 1, Ino: tok + 10})
			r.remove(tok)
			tok++
		}
	}
	fi, err := os.Stat(r.path)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("record after 20000 runs: %d bytes", fi.Size())
	if fi.Size() > 64<<10 {
		t.Errorf("the record of a server holding 1 placeholder is %d bytes after 20000 runs", fi.Size())
	}
	data, _ := os.ReadFile(r.path)
	f, _ := os.Open(r.path)
	defer f.Close()
	if got := parseRecords(f); len(got) != 1 || got[0].parentPath != "/work/long" {
		t.Errorf("the record lists %v (%d bytes), want the one held placeholder", got, len(data))
	}
}
