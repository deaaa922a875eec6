package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Attacks on sandboxed file handles (docs/protocol.md §6.11.3). A
// sandboxed command may write in its workspace, so it can put a symbolic
// link where the client will open a handle, or swap one in at any moment.
// A handle must reach only what the sandbox lets the open reach, and keep
// reaching only that.

// handleSandbox is workspaceSandbox(ws) with the folder hidden listed as
// access none.
func handleSandbox(ws, hidden string) map[string]any {
	sb := workspaceSandbox(ws, "restricted")
	if hidden != "" {
		perm := sb["permissions"].(map[string]any)
		fsys := perm["file_system"].(map[string]any)
		fsys["entries"] = append(fsys["entries"].([]any), map[string]any{
			"path": map[string]any{"type": "path", "path": "file://" + hidden}, "access": "none"})
	}
	return sb
}

// swapper flips path between a regular file and a symbolic link to target
// until stop is called, as a sandboxed command in the workspace could.
func swapper(t *testing.T, path, target string) (stop func()) {
	t.Helper()
	dir := filepath.Dir(path)
	file, link := filepath.Join(dir, ".swap-file"), filepath.Join(dir, ".swap-link")
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			time.Sleep(100 * time.Microsecond) // leave the server some CPU
			if i%2 == 0 {
				_ = os.WriteFile(file, []byte("decoy"), 0o644)
				_ = os.Rename(file, path)
			} else {
				_ = os.Symlink(target, link)
				_ = os.Rename(link, path)
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done); wg.Wait() }) }
}

// raceOpens is how many opens that succeed a swap race runs for: 12 by
// default, CODEX_E2E_LOOPS when set (150 or 20 s, whichever comes first,
// was the only bound before). An open is vetted while the swapper flips
// the path every ~0.1 ms, and each state holds it half of the time: a
// server that opened the path again after the helper vetted it (the
// version these tests were written against) writes through a link in
// about half of the opens that succeed, so 12 miss it with odds of 1 in
// 4,000.
func raceOpens(t *testing.T) int { return e2eLoops(t, 12) }

// TestFileHandleSandboxedReplaceRace: the client opens a replace handle in
// the workspace while a symbolic link to a file outside it is swapped in
// and out. Whatever the open found, a write through the handle must never
// reach the outside file (read-only in the sandbox), nor truncate it.
func TestFileHandleSandboxedReplaceRace(t *testing.T) {
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()
	ws, out := t.TempDir(), t.TempDir()
	victim := filepath.Join(out, "victim.txt")
	if err := os.WriteFile(victim, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(ws, "f")
	stop := swapper(t, path, victim)
	defer stop()
	sb := handleSandbox(ws, "")
	opened := 0
	for i, deadline, want := 0, time.Now().Add(20*time.Second), raceOpens(t); opened < want && i < 150 && time.Now().Before(deadline); i++ {
		id := fmt.Sprint("h", i)
		r := c.call("fs/open", map[string]any{"handleId": id, "path": "file://" + path, "mode": "replace", "sandbox": sb})
		if r.Error != nil {
			continue // the open met the link: refused inside the sandbox
		}
		opened++
		c.call("fs/writeBlock", map[string]any{"handleId": id, "offset": 0, "chunk": base64.StdEncoding.EncodeToString([]byte("PWNED"))})
		c.call("fs/close", map[string]any{"handleId": id})
		if got, _ := os.ReadFile(victim); string(got) != "precious" {
			t.Fatalf("attempt %d: the file outside the sandbox now holds %q", i, got)
		}
	}
	stop()
	if opened == 0 {
		t.Fatal("no open succeeded: the race was not run")
	}
	t.Logf("%d opens succeeded, none reached outside", opened)
}

// TestFileHandleSandboxedReadRace: the same race for reading, the link
// pointing at a file hidden by an access-none entry. No read through a
// handle may return its content.
func TestFileHandleSandboxedReadRace(t *testing.T) {
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()
	ws, hidden := t.TempDir(), t.TempDir()
	secret := filepath.Join(hidden, "secret.txt")
	if err := os.WriteFile(secret, []byte("TOPSECRET"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(ws, "f")
	stop := swapper(t, path, secret)
	defer stop()
	sb := handleSandbox(ws, hidden)
	opened := 0
	for i, deadline, want := 0, time.Now().Add(20*time.Second), raceOpens(t); opened < want && i < 150 && time.Now().Before(deadline); i++ {
		id := fmt.Sprint("h", i)
		r := c.call("fs/open", map[string]any{"handleId": id, "path": "file://" + path, "sandbox": sb})
		if r.Error != nil {
			continue
		}
		opened++
		rb := c.call("fs/readBlock", map[string]any{"handleId": id, "offset": 0, "len": 100})
		c.call("fs/close", map[string]any{"handleId": id})
		var res struct {
			Chunk []byte `json:"chunk"`
		}
		if rb.Error == nil {
			_ = json.Unmarshal(rb.Result, &res)
		}
		if strings.Contains(string(res.Chunk), "TOPSECRET") {
			t.Fatalf("attempt %d: a sandboxed handle read the hidden file", i)
		}
	}
	stop()
	if opened == 0 {
		t.Fatal("no open succeeded: the race was not run")
	}
	t.Logf("%d opens succeeded, none read the hidden file", opened)
}

// TestFileHandleSandboxedSwapAfterOpen: a link swapped in after the open
// does not move the handle: the blocks go to the file that was opened,
// never through the path again.
func TestFileHandleSandboxedSwapAfterOpen(t *testing.T) {
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()
	ws, out := t.TempDir(), t.TempDir()
	victim := filepath.Join(out, "victim.txt")
	if err := os.WriteFile(victim, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(ws, "f")
	sb := handleSandbox(ws, "")
	c.ok("fs/open", map[string]any{"handleId": "w", "path": "file://" + path, "mode": "replace", "sandbox": sb}, nil)
	if err := os.WriteFile(path, []byte("first"), 0o644); err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(ws, "moved")
	if err := os.Rename(path, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, path); err != nil {
		t.Fatal(err)
	}
	c.ok("fs/writeBlock", map[string]any{"handleId": "w", "offset": 0, "chunk": base64.StdEncoding.EncodeToString([]byte("PWNED"))}, nil)
	c.ok("fs/close", map[string]any{"handleId": "w"}, nil)
	if got, _ := os.ReadFile(victim); string(got) != "precious" {
		t.Fatalf("the file outside the sandbox now holds %q", got)
	}
	if got, _ := os.ReadFile(moved); string(got) != "PWNED" {
		t.Fatalf("the opened file holds %q, want PWNED", got)
	}
}

// TestFileHandlesEndWithConnection: handles, sandboxed or not, are closed
// when their connection ends; the server keeps no descriptor of them.
func TestFileHandlesEndWithConnection(t *testing.T) {
	s := startServer(t)
	ws := t.TempDir()
	// By identity: a descriptor the fs helper opened names its path as
	// seen in the helper's mount namespace.
	held := func() int {
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", s.cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, fd := range fds {
			st, err := os.Stat(fmt.Sprintf("/proc/%d/fd/%s", s.cmd.Process.Pid, fd.Name()))
			if err != nil {
				continue
			}
			for i := range 2 {
				if f, err := os.Stat(fmt.Sprintf("%s/f%d", ws, i)); err == nil && os.SameFile(st, f) {
					n++
				}
			}
		}
		return n
	}
	c := dial(t, s.URL, nil)
	c.handshake()
	sb := handleSandbox(ws, "")
	for i, mode := range []string{"read", "replace"} {
		for _, sandboxed := range []bool{false, true} {
			p := map[string]any{"handleId": fmt.Sprint(mode, sandboxed), "path": fmt.Sprintf("file://%s/f%d", ws, i), "mode": mode}
			if sandboxed {
				p["sandbox"] = sb
			}
			if mode == "read" {
				if err := os.WriteFile(fmt.Sprintf("%s/f%d", ws, i), []byte("x"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			c.ok("fs/open", p, nil)
		}
	}
	if n := held(); n != 4 {
		t.Fatalf("the server holds %d descriptors in the workspace with 4 handles open", n)
	}
	c.close()
	deadline := time.Now().Add(5 * time.Second)
	for held() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d handles outlived their connection", held())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
