package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// walkReplay is testdata/walk_replay.json, recorded from the reference
// exec-server 0.169.0 by testdata/walk_record.py: a fixture tree and, per
// request, the reference's response. $ROOT stands for the fixture's
// folder. A case's server is "root" or "nobody" (uid and gid 65534, for
// folders root could read).
type walkReplay struct {
	Dirs  []string          `json:"dirs"`
	Files []string          `json:"files"`
	Links map[string]string `json:"links"`
	FIFOs []string          `json:"fifos"`
	Names []string          `json:"names"`
	Modes map[string]string `json:"modes"`
	Cases []walkCase        `json:"cases"`
}

type walkCase struct {
	Name    string          `json:"name"`
	Phase   string          `json:"phase"` // pre-init, pre-initialized, ready
	Server  string          `json:"server"`
	Request json.RawMessage `json:"request"`
	Expect  map[string]any  `json:"expect"`
}

func loadWalkReplay(t *testing.T) walkReplay {
	t.Helper()
	data, err := os.ReadFile("testdata/walk_replay.json")
	if err != nil {
		t.Fatal(err)
	}
	var rp walkReplay
	if err := json.Unmarshal(data, &rp); err != nil {
		t.Fatal(err)
	}
	if len(rp.Cases) < 150 {
		t.Fatalf("only %d recorded cases", len(rp.Cases))
	}
	return rp
}

// buildWalkFixture makes the recorded tree in a new folder that nobody can
// traverse, and returns it.
func buildWalkFixture(t *testing.T, rp walkReplay) string {
	t.Helper()
	root, err := os.MkdirTemp("", "walk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range rp.Dirs {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range rp.Files {
		if err := os.WriteFile(filepath.Join(root, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range rp.Links {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range rp.FIFOs {
		if err := syscall.Mkfifo(filepath.Join(root, f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range rp.Names {
		if err := os.WriteFile(filepath.Join(root, "names", n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for d, m := range rp.Modes {
		mode, err := strconv.ParseUint(strings.TrimPrefix(m, "0o"), 8, 32)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(root, d), os.FileMode(mode)); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// walkConn is one connection of the replay, with its handshake phase.
type walkConn struct {
	c     *cx
	phase string
}

func (w *walkConn) to(t *testing.T, phase string) {
	if w.phase == "pre-init" && phase != "pre-init" {
		result(t, w.c.call("initialize", map[string]any{"clientName": "e2e"}))
		w.phase = "pre-initialized"
	}
	if w.phase == "pre-initialized" && phase == "ready" {
		w.c.write(`{"method":"initialized"}`)
		w.phase = "ready"
	}
}

// ask sends a recorded request (with $ROOT replaced) and returns the
// answer without its id.
func (w *walkConn) ask(t *testing.T, raw json.RawMessage, root string) map[string]any {
	t.Helper()
	var req map[string]any
	d := json.NewDecoder(strings.NewReader(strings.ReplaceAll(string(raw), "$ROOT", root)))
	d.UseNumber() // 2^64-1 stays itself
	if err := d.Decode(&req); err != nil {
		t.Fatal(err)
	}
	id := w.c.nextID
	w.c.nextID++
	req["id"] = id
	b, _ := json.Marshal(req)
	w.c.write(string(b))
	got := w.c.wait(id, 30*time.Second)
	delete(got, "id")
	return got
}

// TestFSWalkReplay builds the recorded fixture (breadth-first order,
// links followed once and not, dangling links and loops, FIFOs, hidden
// folders, names that need percent-encoding, folders nobody may read or
// search, a sandbox that denies a folder) and sends the recorded fs/walk
// requests (before initialize, before initialized, after the handshake;
// budgets, limits and every decoding error) over stdio and WebSocket,
// expecting the reference's answers exactly. The "nobody" cases run
// against a server started as uid 65534.
func TestFSWalkReplay(t *testing.T) {
	t.Parallel()
	rp := loadWalkReplay(t)
	root := buildWalkFixture(t, rp)
	asRoot := os.Geteuid() == 0
	var nobodyBin string
	if asRoot {
		requireNobody(t)
		nobodyBin = nobodyBinary(t)
	}
	home := nobodyDir(t)
	nobody := func(cmd *exec.Cmd) {
		asNobody(home)(cmd)
		cmd.Env = append(cmd.Env, "HOME="+home)
	}
	for _, tr := range []struct {
		name string
		open func(t *testing.T, asNobody bool) *cx
	}{
		{"stdio", func(t *testing.T, asN bool) *cx {
			if asN {
				return cxOverStdio(t, startStdioWith(t, nobodyBin, nobody))
			}
			return cxStdio(t)
		}},
		{"ws", func(t *testing.T, asN bool) *cx {
			if asN {
				return cxOverWS(t, startServerWith(t, nobodyBin, nobody))
			}
			return cxWS(t)
		}},
	} {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			conns := map[string]*walkConn{"root": {c: tr.open(t, false), phase: "pre-init"}}
			if asRoot {
				conns["nobody"] = &walkConn{c: tr.open(t, true), phase: "pre-init"}
			}
			for _, rc := range rp.Cases {
				w := conns[rc.Server]
				if w == nil {
					continue // the nobody cases need a root test to start a nobody server
				}
				w.to(t, rc.Phase)
				got := w.ask(t, rc.Request, root)
				var want map[string]any
				wb, _ := json.Marshal(rc.Expect)
				if err := json.Unmarshal([]byte(strings.ReplaceAll(string(wb), "$ROOT", root)), &want); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					gb, _ := json.Marshal(got)
					wb, _ := json.Marshal(want)
					t.Errorf("%s (%s):\n got %s\nwant %s", rc.Name, rc.Server, gb, wb)
				}
			}
		})
	}
}

// TestFSWalkSandboxHidesDenied is the attack on a sandboxed fs/walk: a
// client whose sandbox denies a folder asks the server to walk it, to walk
// its parent (following links into it, too) and to walk paths inside it.
// Nothing under the folder may come back: no entry below it, no error
// that names something inside it, and the same answer for a path inside
// it that exists as for one that does not. (Before fs/walk went through the
// fs helper, the server walked as itself and listed the secret files.)
func TestFSWalkSandboxHidesDenied(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, d := range []string{"ws/pub", "ws/secret/inner"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"ws/pub/f", "ws/secret/key.pem", "ws/secret/inner/deep.txt"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"ws/lsec": "secret", "ws/pub/lkey": "../secret/key.pem", "ws/lin": "secret/inner"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	secret := filepath.Join(dir, "ws/secret")
	sb := map[string]any{
		"permissions": map[string]any{"type": "managed", "network": "restricted", "file_system": map[string]any{"type": "restricted", "entries": []any{
			map[string]any{"path": map[string]any{"type": "special", "value": map[string]any{"kind": "root"}}, "access": "read"},
			map[string]any{"path": map[string]any{"type": "path", "path": "file://" + secret}, "access": "none"},
		}}},
		"cwd": "file://" + dir, "workspaceRoots": []string{"file://" + dir},
	}
	walk := func(c *cx, path string, follow bool) map[string]any {
		return c.call("fs/walk", map[string]any{"path": "file://" + path, "sandbox": sb, "options": map[string]any{
			"maxDepth": 10, "maxDirectories": 100, "maxEntries": 1000, "followDirectorySymlinks": follow}})
	}
	forEachTransport(t, func(t *testing.T, c *cx) {
		for _, follow := range []bool{false, true} {
			for _, root := range []string{filepath.Join(dir, "ws"), secret, filepath.Join(dir, "ws/lsec"), filepath.Join(dir, "ws/lin")} {
				b, _ := json.Marshal(walk(c, root, follow)) // an error answer may not name it either
				got := string(b)
				for _, leak := range []string{"key.pem", "inner/deep", "deep.txt", "secret/inner", "lin/deep"} {
					if strings.Contains(got, leak) {
						t.Errorf("walk of %s (follow %v) reveals %q: %s", root, follow, leak, got)
					}
				}
			}
			in, missing := walk(c, filepath.Join(secret, "inner"), follow), walk(c, filepath.Join(secret, "nope"), follow)
			if errorOf(in) != errorOf(missing) || errorOf(in) != "-32600 Permission denied (os error 13)" {
				t.Errorf("inside the denied folder: existing %s, missing %s; want both -32600 Permission denied", errorOf(in), errorOf(missing))
			}
		}
	})
}

// TestFSWalkAnswerBudget holds the bound the reference puts on one answer
// (probed with e2e/testdata/walk_budget_probe.py): an entry costs the
// length of its URI plus 64, and the walk stops, truncated, before an
// entry that would take the sum past 4 MiB. With every URI 960 characters
// long (a folder four 200-character levels down) an entry costs 1,024, so
// exactly 4,096 fit: 4,096 files are listed whole, and of 4,097 the last is
// left out with truncated set (probe E; probe A shows the same bound with
// 32,768 entries of 64-character URIs, eight times the server's work for
// the same 4 MiB). Links that are not listed cost nothing.
func TestFSWalkAnswerBudget(t *testing.T) {
	t.Parallel()
	root, name := deepFiles(t, 'p', 960, 4096)
	for i := range 100 { // before the files: examined, not listed, not charged
		if err := os.Symlink(name(0), filepath.Join(root, fmt.Sprintf("%06d-link", i))); err != nil {
			t.Fatal(err)
		}
	}
	walk := func(c *cx) (entries int, last string, truncated bool) {
		// 4 MiB: a race-built server has taken more than call's 15 s
		// under a load of 15 on two cores (both transports at once).
		m := c.wait(c.send("fs/walk", map[string]any{"path": "file://" + root, "options": map[string]any{
			"maxDepth": 0, "maxDirectories": 1, "maxEntries": 50000, "followDirectorySymlinks": false}}), 60*time.Second)
		r := walkResult(t, m)
		es, _ := r["entries"].([]any)
		if len(es) > 0 {
			e, _ := es[len(es)-1].(map[string]any)
			last, _ = e["path"].(string)
		}
		truncated, _ = r["truncated"].(bool)
		return len(es), last, truncated
	}
	t.Run("fit", func(t *testing.T) { // waits for its parallel subtests
		forEachTransport(t, func(t *testing.T, c *cx) {
			if n, last, tr := walk(c); n != 4096 || tr || last != "file://"+root+"/"+name(4095) {
				t.Errorf("4,096 files: %d entries, last %s, truncated %v; want all, untruncated", n, last, tr)
			}
		})
	})
	f, err := os.Create(filepath.Join(root, name(4096)))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	t.Run("one-more", func(t *testing.T) {
		forEachTransport(t, func(t *testing.T, c *cx) {
			if n, last, tr := walk(c); n != 4096 || !tr || last != "file://"+root+"/"+name(4095) {
				t.Errorf("4,097 files: %d entries, last %s, truncated %v; want 4,096, truncated", n, last, tr)
			}
		})
	})
}

// deepFiles makes n files in a folder four 200-character levels (of
// letter) below a new temporary folder (searchable by all), each named so
// that its file URI is uriLen characters long, and returns the
// file folder and the name of file i. It skips the test where
// the temporary folder leaves no such name.
func deepFiles(t *testing.T, letter rune, uriLen, n int) (root string, name func(int) string) {
	t.Helper()
	base, err := os.MkdirTemp("", "wb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	level := strings.Repeat(string(letter), 200)
	root = filepath.Join(base, level, level, level, level)
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	pad := uriLen - len("file://"+root) - 1 - 6
	if pad < 0 || pad+6 > 255 {
		t.Skipf("temporary folder %s does not leave a name for %d-character URIs", base, uriLen)
	}
	name = func(i int) string { return fmt.Sprintf("%06d%s", i, strings.Repeat(string(letter), pad)) }
	for i := range n {
		f, err := os.Create(filepath.Join(root, name(i)))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	return root, name
}

// TestFSWalkAnswerBudgetErrors: an errors item costs the length of its URI
// and of its message plus 64 (walk_budget_probe.py, probes B and F). A
// server run as nobody walks a folder it may read but not search: every
// entry is an errors item "Permission denied (os error 13)" (31
// characters); with 929-character URIs each costs 1,024, so 4,096 fit in
// 4 MiB and of 4,097 the last is left out (probe F).
func TestFSWalkAnswerBudgetErrors(t *testing.T) {
	t.Parallel()
	requireNobody(t)
	root, name := deepFiles(t, 'q', 929, 4097)
	if err := os.Chmod(root, 0o644); err != nil {
		t.Fatal(err)
	}
	home := nobodyDir(t)
	c := cxOverStdio(t, startStdioWith(t, nobodyBinary(t), asNobody(home)))
	c.call("initialize", map[string]any{"clientName": "e2e"})
	c.write(`{"method":"initialized"}`)
	m := c.wait(c.send("fs/walk", map[string]any{"path": "file://" + root, "options": map[string]any{ // as in TestFSWalkAnswerBudget
		"maxDepth": 0, "maxDirectories": 1, "maxEntries": 50000, "followDirectorySymlinks": false}}), 60*time.Second)
	r := walkResult(t, m)
	entries, _ := r["entries"].([]any)
	errs, _ := r["errors"].([]any)
	truncated, _ := r["truncated"].(bool)
	item := func(i int, key string) string {
		e, _ := errs[i].(map[string]any)
		s, _ := e[key].(string)
		return s
	}
	if len(entries) != 0 || len(errs) != 4096 || !truncated ||
		item(4095, "path") != "file://"+root+"/"+name(4095) || item(0, "message") != "Permission denied (os error 13)" {
		t.Errorf("%d entries, %d errors, truncated %v; want 4,096 errors and truncated", len(entries), len(errs), truncated)
	}
}

// walkResult is the result of an fs/walk answer as cx decoded it (a 4
// MiB answer encoded and decoded again costs seconds under -race).
func walkResult(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	r, ok := m["result"].(map[string]any)
	if !ok {
		t.Fatalf("fs/walk: %v", m)
	}
	return r
}
