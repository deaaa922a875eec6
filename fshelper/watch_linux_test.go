package fshelper_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/codexec/codex/fshelper"
)

// watchRig is one connection's slot whose notifications land on a channel.
type watchRig struct {
	w     *fshelper.MissingWatcher
	fired chan uint64
}

func newWatchRig(t *testing.T) *watchRig {
	r := &watchRig{fired: make(chan uint64, 16)}
	r.w = fshelper.NewMissingWatcher(func(_ context.Context, id uint64) { r.fired <- id })
	t.Cleanup(r.w.Close)
	return r
}

// expect waits for one notification with id; want 0 means none within a
// short while.
func (r *watchRig) expect(t *testing.T, want uint64) {
	t.Helper()
	wait := 3 * time.Second
	if want == 0 {
		wait = 300 * time.Millisecond
	}
	select {
	case id := <-r.fired:
		if want == 0 || id != want {
			t.Fatalf("fired %d, want %d", id, want)
		}
	case <-time.After(wait):
		if want != 0 {
			t.Fatalf("no notification for %d", want)
		}
	}
}

// The recorded cases of the reference (docs/protocol.md §6.11.1): what arms,
// and which change fires; with inotify, and polled (the fallback), where a
// change inside the present directory fires too.
func TestWatchMissingFiresLikeReference(t *testing.T) {
	for _, polled := range []bool{false, true} {
		t.Run("polled="+strconv.FormatBool(polled), func(t *testing.T) { testWatchCases(t, polled) })
	}
}

func testWatchCases(t *testing.T, polled bool) {
	cases := []struct {
		name     string
		setup    func(d string)
		missing  []string
		present  string
		watching bool
		act      func(d string)
		fires    bool
	}{
		{"file created", nil, []string{"a"}, "", true, func(d string) { wtouch(d, "a") }, true},
		{"dir created", nil, []string{"a"}, "", true, func(d string) { wmkdir(d, "a") }, true},
		{"ancestor created", nil, []string{"a/b/c"}, "", true, func(d string) { wmkdir(d, "a") }, true},
		{"ancestor created as a file", nil, []string{"a/b/c"}, "", true, func(d string) { wtouch(d, "a") }, true},
		{"unrelated name", nil, []string{"a"}, "", true, func(d string) { wtouch(d, "b") }, false},
		{"unrelated below the ancestor", func(d string) { wmkdir(d, "a") }, []string{"a/b/c"}, "", true, func(d string) { wtouch(d, "a/zzz") }, false},
		{"broken symlink created", nil, []string{"a"}, "", true, func(d string) { _ = os.Symlink(filepath.Join(d, "zz"), filepath.Join(d, "a")) }, true},
		{"present removed", func(d string) { wmkdir(d, "g") }, []string{"a"}, "g", true, func(d string) { _ = os.Remove(filepath.Join(d, "g")) }, true},
		{"present modified", func(d string) { wtouch(d, "g") }, []string{"a"}, "g", true, func(d string) { _ = os.WriteFile(filepath.Join(d, "g"), []byte("x"), 0o644) }, true},
		{"present read", func(d string) { wtouch(d, "g") }, []string{"a"}, "g", true, func(d string) { _, _ = os.ReadFile(filepath.Join(d, "g")) }, false},
		{"inside present", func(d string) { wmkdir(d, "g") }, []string{"a"}, "g", true, func(d string) { wtouch(d, "g/x") }, false},
		{"ancestor removed", func(d string) { wmkdir(d, "a/b") }, []string{"a/b/c"}, "", true, func(d string) { _ = os.Remove(filepath.Join(d, "a/b")) }, true},
		{"grandparent renamed", func(d string) { wmkdir(d, "a/b") }, []string{"a/b/c"}, "", true, func(d string) { _ = os.Rename(filepath.Join(d, "a"), filepath.Join(d, "old")) }, true},
		{"existing path", func(d string) { wmkdir(d, "a") }, []string{"a"}, "", false, nil, false},
		{"existing broken symlink", func(d string) { _ = os.Symlink(filepath.Join(d, "zz"), filepath.Join(d, "a")) }, []string{"a"}, "", false, nil, false},
		{"empty list", nil, []string{}, "", false, nil, false},
		{"present missing", nil, []string{"a"}, "g", false, nil, false},
		{"parent is a file", func(d string) { wtouch(d, "f") }, []string{"f/x"}, "", false, nil, false},
		{"symlinked parent", func(d string) { wmkdir(d, "real"); _ = os.Symlink(filepath.Join(d, "real"), filepath.Join(d, "link")) }, []string{"link/a"}, "", false, nil, false},
		{"symlinked present", func(d string) { wmkdir(d, "real"); _ = os.Symlink(filepath.Join(d, "real"), filepath.Join(d, "g")) }, []string{"a"}, "g", false, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := t.TempDir()
			if c.setup != nil {
				c.setup(d)
			}
			if polled && c.name == "inside present" {
				t.Skip("the polled fallback sees the directory's times change")
			}
			r := newWatchRig(t)
			if polled {
				fshelper.ForcePoll(r.w)
			}
			missing := make([]string, len(c.missing))
			for i, m := range c.missing {
				missing[i] = filepath.Join(d, m)
			}
			present := ""
			if c.present != "" {
				present = filepath.Join(d, c.present)
			}
			if got := r.w.Watch(1, missing, present); got != c.watching {
				t.Fatalf("watching %v, want %v", got, c.watching)
			}
			if c.watching && fshelper.WatchPolled(r.w) != polled {
				t.Fatalf("polled %v", !polled)
			}
			if c.act != nil {
				c.act(d)
			}
			if c.fires {
				r.expect(t, 1)
				r.expect(t, 0) // once
			} else {
				r.expect(t, 0)
			}
		})
	}
}

// The slot rules: only a larger id is considered; a considered request
// replaces (or empties) the slot.
func TestWatchMissingSlotRules(t *testing.T) {
	d := t.TempDir()
	p := func(n string) []string { return []string{filepath.Join(d, n)} }
	r := newWatchRig(t)
	for i, step := range []struct {
		id   uint64
		path string
		want bool
	}{{5, "a", true}, {5, "b", false}, {3, "b", false}, {0, "b", false}} {
		if got := r.w.Watch(step.id, p(step.path), ""); got != step.want {
			t.Fatalf("step %d: watching %v", i, got)
		}
	}
	wmkdir(d, "b")
	r.expect(t, 0) // 5 still watches a
	wmkdir(d, "a")
	r.expect(t, 5)
	if r.w.Watch(5, p("c"), "") {
		t.Fatal("a fired id was reused")
	}
	if !r.w.Watch(6, p("c"), "") || !r.w.Watch(7, p("d"), "") {
		t.Fatal("6, 7 not armed")
	}
	wmkdir(d, "c")
	r.expect(t, 0) // 6 was replaced
	if r.w.Watch(8, p("a"), "") {
		t.Fatal("existing path armed")
	}
	wmkdir(d, "d")
	r.expect(t, 0) // 7 was dropped by 8
	if !r.w.Watch(^uint64(0), p("e"), "") || r.w.Watch(^uint64(0), p("f"), "") {
		t.Fatal("largest id")
	}
}

// A watch over more directories than the bound is polled, and still fires
// when an ancestor of a missing path appears.
func TestWatchMissingPolledBeyondBound(t *testing.T) {
	d := t.TempDir()
	var missing []string
	for i := range fshelper.MaxWatchedDirs + 1 {
		sub := filepath.Join(d, strconv.Itoa(i))
		wmkdir(sub, "")
		missing = append(missing, filepath.Join(sub, "x", "y"))
	}
	r := newWatchRig(t)
	if !r.w.Watch(1, missing, "") {
		t.Fatal("not watching")
	}
	if !fshelper.WatchPolled(r.w) {
		t.Fatal("not polled")
	}
	wmkdir(d, "7/x")
	r.expect(t, 1)
}

// Attack: a sandboxed command can write in its workspace, so it can make a
// component of a watched path a symbolic link to a directory it cannot
// see (here, outside). Following it would tell the client whether
// outside/skills exists (watching false or true) and when it appears there.
// The watch refuses any path through a symbolic link.
func TestWatchMissingRefusesSymlinkRedirect(t *testing.T) {
	root := t.TempDir()
	ws, outside := filepath.Join(root, "ws"), filepath.Join(root, "outside")
	wmkdir(ws, "")
	wmkdir(outside, "")
	if err := os.Symlink(outside, filepath.Join(ws, ".agents")); err != nil {
		t.Fatal(err)
	}
	r := newWatchRig(t)
	if r.w.Watch(1, []string{filepath.Join(ws, ".agents/skills")}, "") {
		t.Error("a watch through a symbolic link was armed")
	}
	wmkdir(outside, "skills")
	r.expect(t, 0)
	// Existence oracle: the answer must not depend on the link's target.
	if r.w.Watch(2, []string{filepath.Join(ws, ".agents/skills/x")}, "") {
		t.Error("existence of a path outside was revealed")
	}
}

// The slot's goroutine and inotify fd end with Close.
func TestWatchMissingCloseReleases(t *testing.T) {
	before := openFDs(t)
	d := t.TempDir()
	r := &watchRig{fired: make(chan uint64, 1)}
	r.w = fshelper.NewMissingWatcher(func(context.Context, uint64) { r.fired <- 0 })
	if !r.w.Watch(1, []string{filepath.Join(d, "a")}, "") {
		t.Fatal("not watching")
	}
	if openFDs(t) <= before {
		t.Fatal("no inotify fd open")
	}
	r.w.Close()
	if after := openFDs(t); after != before {
		t.Fatalf("fds %d before, %d after", before, after)
	}
	if r.w.Watch(2, []string{filepath.Join(d, "b")}, "") {
		t.Fatal("armed after Close")
	}
}

func openFDs(t *testing.T) int {
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

func wtouch(d, n string) {
	if err := os.WriteFile(filepath.Join(d, n), nil, 0o644); err != nil {
		panic(err)
	}
}

func wmkdir(d, n string) {
	if err := os.MkdirAll(filepath.Join(d, n), 0o755); err != nil {
		panic(err)
	}
}
