package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// clientSandbox is the exact sandbox object the 0.169.0 client sends in
// workspace-write mode (docs/protocol.md §8.1): the project, /tmp and $TMPDIR
// writable, .git/.agents/.codex/.aws read-only.
func clientSandbox(root string) map[string]any {
	sb := workspaceSandbox(root, "restricted")
	fsys := sb["permissions"].(map[string]any)["file_system"].(map[string]any)
	special := func(kind string) map[string]any {
		return map[string]any{"type": "special", "value": map[string]any{"kind": kind}}
	}
	entries := fsys["entries"].([]any)
	extra := []any{
		map[string]any{"path": special("slash_tmp"), "access": "write"},
		map[string]any{"path": special("tmpdir"), "access": "write"},
	}
	fsys["entries"] = append(append(append([]any{}, entries[:2]...), extra...), entries[2:]...)
	return sb
}

// swapLayout is the shape of the symlink cases of docs/sandbox.md §3.4: a project at
// <tmp>/p/proj (so its parent lies in the writable /tmp) and a victim
// directory outside every writable root.
type swapLayout struct {
	base, proj, victim string
}

func newSwapLayout(t *testing.T) swapLayout {
	t.Helper()
	base := t.TempDir()
	if !strings.HasPrefix(base, "/tmp/") {
		t.Skipf("the temp directory %s is not below /tmp, the writable root of the client profile", base)
	}
	proj := filepath.Join(base, "p", "proj")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	victim, err := os.MkdirTemp("/var/tmp", "codex-victim-")
	if err != nil {
		t.Skipf("no /var/tmp for a victim directory outside the roots: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(victim) })
	return swapLayout{base: base, proj: proj, victim: victim}
}

// swapScript moves the project's parent away and plants a symlink to the
// victim where the project was.
func (l swapLayout) swapScript() string {
	p := filepath.Join(l.base, "p")
	return "cd / && mv " + p + " " + p + ".moved && mkdir " + p + " && ln -s " + l.victim + " " + l.proj + " && echo swapped"
}

// Escape 1: run 1 replaces the workspace by a symlink to a victim outside
// the roots; run 2 with the same profile and cwd must not get the victim as
// a writable root.
func TestSandboxWorkspaceSymlinkSwap(t *testing.T) {
	l := newSwapLayout(t)
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()
	sb := clientSandbox(l.proj)

	out, code, _ := runSandboxed(t, c, sandboxedStart("swap", l.proj, sb, false, l.swapScript()))
	if code != 0 || !strings.Contains(out, "swapped") {
		t.Fatalf("run 1 (the swap): code %d out %q", code, out)
	}
	if fi, err := os.Lstat(l.proj); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the swap did not leave a symlink at %s: %v", l.proj, err)
	}
	out, code, _ = runSandboxed(t, c, sandboxedStart("write", l.proj, sb, false,
		"echo pwned > pwned; echo pwned > "+filepath.Join(l.victim, "pwned2")+"; pwd"))
	if _, err := os.Lstat(filepath.Join(l.victim, "pwned")); err == nil {
		t.Fatalf("run 2 wrote into the victim through the swapped workspace (code %d, out %q)", code, out)
	}
	if _, err := os.Lstat(filepath.Join(l.victim, "pwned2")); err == nil {
		t.Fatalf("run 2 wrote into the victim by its path (code %d, out %q)", code, out)
	}
	if code != 1 || !strings.Contains(out, "cannot enforce sandbox read-only path") ||
		!strings.Contains(out, "crosses writable symlink "+l.proj) || strings.Contains(out, "panic") {
		t.Fatalf("run 2: code %d out %q, want the symlink refusal", code, out)
	}

	// A workspace reached through a symlink outside every writable root
	// still runs at its target.
	home := t.TempDir()
	link := filepath.Join("/var/tmp", filepath.Base(home)+"-link")
	if err := os.Symlink(home, link); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(link)
	out, code, _ = runSandboxed(t, c, sandboxedStart("legit", link, workspaceSandbox(link, "restricted"), false, "echo ok > ok.txt && pwd"))
	if code != 0 || strings.TrimSpace(out) != home {
		t.Fatalf("symlinked workspace outside the roots: code %d out %q", code, out)
	}
	if b, _ := os.ReadFile(filepath.Join(home, "ok.txt")); string(b) != "ok\n" {
		t.Fatalf("ok.txt is %q", b)
	}
}

// Escape 2: the swap within one run must not make the server delete the
// victim's .codex when it cleans up the protected names of the workspace.
//
// The project sits inside a parent repository, so its missing .git is
// watched and swept rather than shadowed, and the victim has both a .codex
// and a .git.
func TestSandboxCleanupDoesNotFollowSwap(t *testing.T) {
	l := newSwapLayout(t)
	if err := os.MkdirAll(filepath.Join(l.base, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(l.base, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var keeps []string
	for _, name := range []string{".codex", ".git"} {
		keep := filepath.Join(l.victim, name, "keep")
		if err := os.MkdirAll(filepath.Dir(keep), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(keep, []byte("precious\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		keeps = append(keeps, keep)
	}
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()
	out, code, _ := runSandboxed(t, c, sandboxedStart("swap", l.proj, clientSandbox(l.proj), false, l.swapScript()))
	if !strings.Contains(out, "swapped") {
		t.Fatalf("the swap failed: code %d out %q", code, out)
	}
	// The cleanup runs before process/closed; allow a moment more so that
	// a cleanup that runs later is caught too.
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		for _, keep := range keeps {
			if b, err := os.ReadFile(keep); err != nil || string(b) != "precious\n" {
				t.Fatalf("the victim's %s was touched after the run: %v %q", filepath.Base(filepath.Dir(keep)), err, b)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The placeholder went with the moved project and was removed there.
	if _, err := os.Lstat(filepath.Join(l.base, "p.moved", "proj", ".codex")); err == nil {
		t.Fatal("the placeholder is left in the moved project")
	}
}

// Escape 3: a missing .codex must not come into existence, not even for a
// moment: the command sees EROFS, the host never sees the directory, and no
// placeholder is left behind.
func TestSandboxMissingCodexNeverAppears(t *testing.T) {
	root := t.TempDir()
	codex := filepath.Join(root, ".codex")
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()

	script := `for i in $(seq 300); do mkdir -p .codex 2>/dev/null && echo x > .codex/config.toml 2>/dev/null; done; mkdir .codex`
	var (
		wg    sync.WaitGroup
		seen  int
		polls int
	)
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			select {
			case <-stop:
				return
			default:
			}
			polls++
			// An empty directory is the read-only placeholder, there only
			// while the command runs; anything else is the command's. The
			// placeholder may go between the Lstat and the listing (the
			// run ended): that is no content.
			if fi, err := os.Lstat(codex); err == nil {
				ents, lerr := os.ReadDir(codex)
				if !fi.IsDir() || (lerr == nil && len(ents) > 0) || (lerr != nil && !os.IsNotExist(lerr)) {
					seen++
					t.Logf("poll %d: %s mode %v, entries %d, listing error %v", polls, codex, fi.Mode(), len(ents), lerr)
				}
			}
			time.Sleep(time.Millisecond)
		}
	}()
	out, code, denied := runSandboxed(t, c, sandboxedStart("loop", root, clientSandbox(root), false, script))
	close(stop)
	wg.Wait()
	if seen > 0 {
		t.Fatalf(".codex with content was visible on the host in %d of %d polls", seen, polls)
	}
	if code == 0 || !denied || !strings.Contains(out, "Read-only file system") {
		t.Fatalf("mkdir .codex: code %d denied %v out %q, want EROFS", code, denied, out)
	}
	if _, err := os.Lstat(codex); err == nil {
		t.Fatalf("%s is left after the run", codex)
	}
}

func emptyDir(p string) bool {
	ents, err := os.ReadDir(p)
	return err == nil && len(ents) == 0
}

// Concurrent runs in one root share the placeholder: the end of one run
// does not unshadow .codex for another still running, a run killed by
// SIGKILL leaves nothing behind, and the last run removes the placeholder.
func TestSandboxPlaceholderSharedAndKilled(t *testing.T) {
	root := t.TempDir()
	codex := filepath.Join(root, ".codex")
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()
	sb := clientSandbox(root)

	// A waits on stdin for its turn to try mkdir.
	pa := sandboxedStart("long", root, sb, false, `echo ready; read -r _; touch .codex/config.toml; echo rc=$?`)
	pa["pipeStdin"] = true
	c.ok("process/start", pa, nil)
	waitOutput(t, c, "long", "ready")
	if _, code, _ := runSandboxed(t, c, sandboxedStart("short", root, sb, false, "true")); code != 0 {
		t.Fatalf("short run: exit %d", code)
	}
	if fi, err := os.Lstat(codex); err != nil || !fi.IsDir() || !emptyDir(codex) {
		t.Fatalf("the placeholder of the running process is gone after another run ended: %v", err)
	}
	c.ok("process/write", map[string]any{"processId": "long", "chunk": "Z28K"}, nil)
	out, code := checkEvents(t, c.events("long", 20*time.Second))
	if !strings.Contains(out, "Read-only file system") || !strings.Contains(out, "rc=1") || code != 0 {
		t.Fatalf("mkdir .codex after the other run ended: code %d out %q", code, out)
	}
	if _, err := os.Lstat(codex); err == nil {
		t.Fatalf("%s is left after both runs", codex)
	}

	// A helper killed by SIGKILL (process/terminate) cannot clean up; the
	// server does.
	pk := sandboxedStart("killed", root, sb, false, "echo ready; exec sleep 100")
	c.ok("process/start", pk, nil)
	waitOutput(t, c, "killed", "ready")
	if _, err := os.Lstat(codex); err != nil {
		t.Fatalf("no placeholder while running: %v", err)
	}
	c.ok("process/terminate", map[string]any{"processId": "killed"}, nil)
	if evs := c.events("killed", 20*time.Second); len(evs) == 0 || evs[len(evs)-1].Method != "process/closed" {
		t.Fatalf("killed run did not close: %v", evs)
	}
	if _, err := os.Lstat(codex); err == nil {
		t.Fatalf("%s is left after a killed run", codex)
	}
}
