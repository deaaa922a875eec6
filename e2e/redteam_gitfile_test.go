package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Red team (docs/sandbox.md §3.4): the planner reads `.git`
// pointer files on the host with os.ReadFile, following symlinks and with
// no size bound (insideParentRepo → gitdirOf, defaultCarves → gitdirOf).
// A sandboxed command in the client profile can write the parent of its
// project (it lies in the writable /tmp), so run 1 plants a sparse 1 TiB
// regular file named .git there; planning run 2 then allocates 1 TiB and
// the whole server dies with "fatal error: runtime: out of memory",
// taking every other connection and session with it.
//
// Must hold: a sandboxed command cannot crash the server; the server reads
// a bounded prefix of a pointer file, without following symlinks.
func TestRedteamHugeGitFileCrashesServer(t *testing.T) {
	l := newSwapLayout(t)
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()
	sb := clientSandbox(l.proj)
	dotGit := filepath.Join(filepath.Dir(l.proj), ".git")

	out, code, _ := runSandboxed(t, c, sandboxedStart("plant", l.proj, sb, false,
		"truncate -s 1T "+dotGit+" && echo planted"))
	if code != 0 || !strings.Contains(out, "planted") {
		t.Fatalf("run 1 could not plant the file: code %d out %q", code, out)
	}
	defer os.Remove(dotGit)

	// Run 2: any sandboxed start in the same project.
	c.send("process/start", sandboxedStart("victim", l.proj, sb, false, "echo alive"))
	select {
	case <-s.done:
		t.Fatalf("the server died planning run 2: %s", firstLines(s.stderr.String(), 3))
	case m, ok := <-c.msgs:
		if !ok {
			t.Fatalf("connection closed while planning run 2: %s", firstLines(s.stderr.String(), 3))
		}
		_ = m
	case <-time.After(10 * time.Second):
		t.Fatal("no answer to run 2 within 10 s")
	}
	// The server still serves a fresh client.
	c2 := dial(t, s.URL, nil)
	c2.handshake()
	c2.close()
}

// firstLines returns the first n lines of s.
func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, " | ")
}
