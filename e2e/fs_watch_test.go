package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// watchPeer is one connection, over stdio or WebSocket, seen as the
// reference probes saw it: a request line gives its answer without the id;
// notifications are read apart.
type watchPeer interface {
	// ask sends a request line whose id is id and returns the answer,
	// compacted, without its id: {"result":…} or {"error":…}.
	ask(t *testing.T, id int, line string) string
	// note returns the next notification, compacted, or "" if none comes
	// within wait.
	note(t *testing.T, wait time.Duration) string
	raw(t *testing.T, line string)
}

type stdioWatchPeer struct {
	s     *stdioServer
	notes []string
}

func (p *stdioWatchPeer) raw(t *testing.T, line string) { p.s.send(t, line+"\n") }

func (p *stdioWatchPeer) ask(t *testing.T, id int, line string) string {
	t.Helper()
	p.raw(t, line)
	for {
		m := p.s.recv(t)
		if _, ok := m["method"]; ok {
			p.notes = append(p.notes, compact(t, m))
			continue
		}
		if fmt.Sprint(m["id"]) != fmt.Sprint(id) {
			t.Fatalf("answer %v, want id %d", m, id)
		}
		delete(m, "id")
		return compact(t, m)
	}
}

func (p *stdioWatchPeer) note(t *testing.T, wait time.Duration) string {
	t.Helper()
	if len(p.notes) > 0 {
		n := p.notes[0]
		p.notes = p.notes[1:]
		return n
	}
	select {
	case l, ok := <-p.s.lines:
		if !ok {
			t.Fatal("stdout closed")
		}
		var m map[string]any
		_ = json.Unmarshal([]byte(l), &m)
		return compact(t, m)
	case <-time.After(wait):
		return ""
	}
}

type wsWatchPeer struct {
	c    *client
	seen int // notifications consumed
}

func (p *wsWatchPeer) raw(t *testing.T, line string) { p.c.sendRaw(line) }

func (p *wsWatchPeer) ask(t *testing.T, id int, line string) string {
	t.Helper()
	p.raw(t, line)
	r := p.c.next()
	if string(r.ID) != fmt.Sprint(id) {
		t.Fatalf("answer id %s, want %d", r.ID, id)
	}
	m := map[string]any{}
	if r.Error != nil {
		m["error"] = r.Error
	} else {
		m["result"] = json.RawMessage(r.Result)
	}
	return compact(t, m)
}

func (p *wsWatchPeer) note(t *testing.T, wait time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		p.c.mu.Lock()
		if len(p.c.notifs) > p.seen {
			n := p.c.notifs[p.seen]
			p.seen++
			p.c.mu.Unlock()
			return compact(t, map[string]any{"method": n.Method, "params": n.Params})
		}
		p.c.mu.Unlock()
		if time.Now().After(deadline) {
			return ""
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func compact(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// watchPeers runs f over stdio and over WebSocket, each on a fresh server.
func watchPeers(t *testing.T, f func(t *testing.T, p watchPeer)) {
	t.Run("stdio", func(t *testing.T) { f(t, &stdioWatchPeer{s: startStdio(t)}) })
	t.Run("websocket", func(t *testing.T) {
		s := startServer(t)
		f(t, &wsWatchPeer{c: dial(t, s.URL, nil)})
	})
}

// The answers below were recorded from the reference exec-server 0.169.0
// over stdio (docs/protocol.md §6.11.1), with the same requests.
const (
	watchingTrue  = `{"result":{"watching":true}}`
	watchingFalse = `{"result":{"watching":false}}`
)

func watchErr(code int, msg string) string {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": code, "message": msg}})
	return string(b)
}

func missingChanged(id uint64) string {
	return fmt.Sprintf(`{"method":"fs/missingChanged","params":{"watchId":%d}}`, id)
}

// watchReq is a request line: id, then the params as JSON.
func watchReq(id int, params string) string {
	return fmt.Sprintf(`{"id":%d,"method":"fs/watchMissing","params":%s}`, id, params)
}

// TestWatchMissingHandshakeAndDecode: the filesystem family's gate, a
// decoding error before the gate, and the decoder's texts. [gate.*,
// watch.decode_errors]
func TestWatchMissingHandshakeAndDecode(t *testing.T) {
	watchPeers(t, func(t *testing.T, p watchPeer) {
		d := t.TempDir()
		a := `"file://` + filepath.Join(d, "a") + `"`
		steps := []struct{ params, want string }{
			{`{"watchId":"x"}`, watchErr(-32602, `invalid type: string "x", expected u64`)},
			{`{"watchId":1,"missing":[` + a + `]}`, watchErr(-32600, "client must call initialize before using filesystem methods")},
		}
		id := 0
		for _, s := range steps {
			id++
			if got := p.ask(t, id, watchReq(id, s.params)); got != s.want {
				t.Errorf("%s: %s, want %s", s.params, got, s.want)
			}
		}
		id++
		p.ask(t, id, fmt.Sprintf(`{"id":%d,"method":"initialize","params":{"clientName":"e2e"}}`, id))
		id++
		if got, want := p.ask(t, id, watchReq(id, `{"watchId":1,"missing":[`+a+`]}`)), watchErr(-32600, "client must send initialized before using filesystem methods"); got != want {
			t.Errorf("before initialized: %s", got)
		}
		p.raw(t, `{"method":"initialized"}`)
		for _, s := range []struct{ params, want string }{
			{`null`, watchErr(-32602, "invalid type: null, expected struct FsWatchMissingParams")},
			{`{}`, watchErr(-32602, "missing field `watchId`")},
			{`{"watchId":1}`, watchErr(-32602, "missing field `missing`")},
			{`{"watchId":1,"missing":"x"}`, watchErr(-32602, `invalid type: string "x", expected a sequence`)},
			{`{"watchId":1,"missing":[{}]}`, watchErr(-32602, "invalid type: map, expected a string")},
			{`{"watchId":1,"missing":["rel/x"]}`, watchErr(-32602, "invalid URI: relative URL without a base")},
			{`{"watchId":1,"missing":[` + a + `],"present":"rel"}`, watchErr(-32602, "invalid URI: relative URL without a base")},
			{`{"watchId":-1,"missing":[]}`, watchErr(-32602, "invalid number")},
			{`{"watchId":1.5,"missing":[]}`, watchErr(-32602, "invalid number")},
			{`[1,[]]`, watchErr(-32602, "invalid length 2, expected struct FsWatchMissingParams with 3 elements")},
			{`5`, watchErr(-32602, "invalid type: number, expected struct FsWatchMissingParams")},
			// The gated and refused requests above did not take id 1.
			{`{"watchId":1,"missing":[` + a + `]}`, watchingTrue},
			{`{"watchId":1,"missing":[` + a + `]}`, watchingFalse},
			{`{"watchId":18446744073709551615,"missing":[]}`, watchingFalse},
		} {
			id++
			if got := p.ask(t, id, watchReq(id, s.params)); got != s.want {
				t.Errorf("%s: %s, want %s", s.params, got, s.want)
			}
		}
	})
}

// TestWatchMissingSlotAndFiring replays [watch.*]: the stale-id and
// replace rules, and what fires, on one connection.
func TestWatchMissingSlotAndFiring(t *testing.T) {
	watchPeers(t, func(t *testing.T, p watchPeer) {
		handshakeRaw(t, p)
		d := t.TempDir()
		u := func(n string) string { return `"file://` + filepath.Join(d, n) + `"` }
		mk := func(n string) {
			if err := os.MkdirAll(filepath.Join(d, n), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		id := 10
		ask := func(params, want string) {
			t.Helper()
			id++
			if got := p.ask(t, id, watchReq(id, params)); got != want {
				t.Fatalf("%s: %s, want %s", params, got, want)
			}
		}
		expect := func(want string) {
			t.Helper()
			wait := 3 * time.Second
			if want == "" {
				wait = 300 * time.Millisecond
			}
			if got := p.note(t, wait); got != want {
				t.Fatalf("notification %q, want %q", got, want)
			}
		}
		ask(`{"watchId":5,"missing":[`+u("a")+`]}`, watchingTrue)
		ask(`{"watchId":5,"missing":[`+u("b")+`]}`, watchingFalse)
		ask(`{"watchId":3,"missing":[`+u("b")+`]}`, watchingFalse)
		ask(`{"watchId":0,"missing":[`+u("b")+`]}`, watchingFalse)
		mk("b")
		expect("")
		mk("a")
		expect(missingChanged(5))
		expect("")
		ask(`{"watchId":5,"missing":[`+u("c")+`]}`, watchingFalse)
		ask(`{"watchId":6,"missing":[`+u("c")+`]}`, watchingTrue)
		ask(`{"watchId":7,"missing":[`+u("d")+`]}`, watchingTrue)
		mk("c")
		expect("")
		ask(`{"watchId":8,"missing":[`+u("a")+`]}`, watchingFalse)
		mk("d")
		expect("")
		ask(`{"watchId":9,"missing":[]}`, watchingFalse)
		ask(`{"watchId":10,"missing":[`+u("x/y/z")+`],"present":`+u("a")+`}`, watchingTrue)
		mk("x") // a missing ancestor appears
		expect(missingChanged(10))
		ask(`{"watchId":11,"missing":[`+u("e")+`],"present":`+u("a")+`}`, watchingTrue)
		if err := os.Remove(filepath.Join(d, "a")); err != nil {
			t.Fatal(err)
		}
		expect(missingChanged(11))
		ask(`{"watchId":12,"missing":[`+u("e")+`],"present":`+u("nope")+`}`, watchingFalse)
		// A file, not a folder, fires too; so does a broken symbolic link.
		ask(`{"watchId":13,"missing":[`+u("f")+`]}`, watchingTrue)
		if err := os.WriteFile(filepath.Join(d, "f"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		expect(missingChanged(13))
		ask(`{"watchId":14,"missing":[`+u("l")+`]}`, watchingTrue)
		if err := os.Symlink(filepath.Join(d, "nowhere"), filepath.Join(d, "l")); err != nil {
			t.Fatal(err)
		}
		expect(missingChanged(14))
		// A path through a file, and through a symbolic link, is not watched.
		ask(`{"watchId":15,"missing":[`+u("f/x")+`]}`, watchingFalse)
		ask(`{"watchId":16,"missing":[`+u("l/x")+`]}`, watchingFalse)
	})
}

// TestWatchMissingSkillFolder is what the real Codex CLI does at start-up
// (docs/protocol.md §6.11.1): it watches .agents/skills in every folder from
// the project root to the cwd, with the root's .git as present, and is told
// when a skill folder is created during the session.
func TestWatchMissingSkillFolder(t *testing.T) {
	watchPeers(t, func(t *testing.T, p watchPeer) {
		handshakeRaw(t, p)
		repo := t.TempDir()
		for _, dir := range []string{".git", "pkg"} {
			if err := os.Mkdir(filepath.Join(repo, dir), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		params := fmt.Sprintf(`{"watchId":1,"missing":["file://%[1]s/.agents/skills","file://%[1]s/pkg/.agents/skills"],"present":"file://%[1]s/.git"}`, repo)
		if got := p.ask(t, 17, watchReq(17, params)); got != watchingTrue {
			t.Fatalf("watch: %s", got)
		}
		if err := os.MkdirAll(filepath.Join(repo, "pkg/.agents/skills/new-skill"), 0o755); err != nil {
			t.Fatal(err)
		}
		if got := p.note(t, 3*time.Second); got != missingChanged(1) {
			t.Fatalf("notification %q", got)
		}
		if got := p.note(t, 300*time.Millisecond); got != "" {
			t.Fatalf("second notification %q", got)
		}
	})
}

// handshakeRaw runs initialize (id 1) and initialized.
func handshakeRaw(t *testing.T, p watchPeer) {
	t.Helper()
	if got := p.ask(t, 1, `{"id":1,"method":"initialize","params":{"clientName":"e2e"}}`); !strings.HasPrefix(got, `{"result":`) {
		t.Fatalf("initialize: %s", got)
	}
	p.raw(t, `{"method":"initialized"}`)
}

// TestWatchMissingEndsWithConnection: a connection closed with an armed
// watch leaves no inotify instance in the server, and a folder created
// afterwards is reported to no one.
func TestWatchMissingEndsWithConnection(t *testing.T) {
	s := startServer(t)
	inotifies := func() int {
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", s.cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, fd := range fds {
			if l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", s.cmd.Process.Pid, fd.Name())); l == "anon_inode:inotify" {
				n++
			}
		}
		return n
	}
	base := inotifies()
	d := t.TempDir()
	for round := range 3 {
		c := dial(t, s.URL, nil)
		p := &wsWatchPeer{c: c}
		handshakeRaw(t, p)
		if got := p.ask(t, 2, watchReq(2, fmt.Sprintf(`{"watchId":1,"missing":["file://%s/a%d"]}`, d, round))); got != watchingTrue {
			t.Fatalf("watch: %s", got)
		}
		if n := inotifies(); n != base+1 {
			t.Fatalf("round %d: %d inotify instances with a watch armed, want %d", round, n, base+1)
		}
		c.close()
		deadline := time.Now().Add(5 * time.Second)
		for inotifies() != base {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the watch's inotify instance outlived its connection", round)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// TestWatchMissingSandboxedSymlinkAttack: a sandboxed command may write in
// its workspace, so it can plant pkg/.agents as a link to a folder outside
// its sandbox, where the real client then watches pkg/.agents/skills.
// Followed, the watch would tell whether skills exists out there (watching
// false or true) and when it appears. The watch refuses any path through a
// link, whatever lies behind it.
func TestWatchMissingSandboxedSymlinkAttack(t *testing.T) {
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()
	p := &wsWatchPeer{c: c}
	root := t.TempDir()
	outside := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := "mkdir -p pkg && ln -s " + outside + " pkg/.agents && ls pkg/.agents/ >/dev/null && echo planted"
	out, code, _ := runSandboxed(t, c, sandboxedStart("plant", root, workspaceSandbox(root, "restricted"), false, script))
	if code != 0 || !strings.Contains(out, "planted") {
		t.Fatalf("the command could not plant its link: %d %q", code, out)
	}
	c.mu.Lock()
	p.seen = len(c.notifs) // past the process's notifications
	c.mu.Unlock()
	id := 100
	watch := func(watchID int) string {
		id++
		return p.ask(t, id, watchReq(id, fmt.Sprintf(`{"watchId":%d,"missing":["file://%[2]s/.agents/skills","file://%[2]s/pkg/.agents/skills"],"present":"file://%[2]s/.git"}`, watchID, root)))
	}
	if got := watch(1); got != watchingFalse {
		t.Fatalf("watch through the planted link: %s", got)
	}
	if err := os.Mkdir(filepath.Join(outside, "skills"), 0o755); err != nil {
		t.Fatal(err)
	}
	if n := p.note(t, 300*time.Millisecond); n != "" {
		t.Fatalf("a folder outside the sandbox was reported: %s", n)
	}
	// The answer does not depend on what exists behind the link.
	if got := watch(2); got != watchingFalse {
		t.Fatalf("with skills outside: %s", got)
	}
}
