package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Red team (docs/sandbox.md §4.4): sandboxed commands run as
// uid 0 (no capabilities), so every file they make in a writable root is
// owned by root, and an owner may set the set-user-ID bit without any
// capability; Landlock does not cover chmod, and the host's /tmp (and the
// workspace) allow setuid. A sandboxed command therefore leaves a
// setuid-root program on the host, which any unprivileged local user
// runs as euid 0. Two ways: chmod 4755 on a copy of a program, and
// open(O_CREAT) with mode 04755.
//
// Must hold: nothing a sandboxed command leaves on the host is setuid or
// setgid root (for example: seccomp refusing S_ISUID|S_ISGID in the mode of
// chmod/fchmod/fchmodat/fchmodat2 and of open/openat/creat/mkdir/mknod,
// with openat2 answered ENOSYS; or running the command as the owner of the
// workspace instead of root).
func TestRedteamSetuidRootLeftOnHost(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the server runs as root only when the tests do")
	}
	root := t.TempDir()
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()
	script := `cp /usr/bin/id chmodded && chmod 4755 chmodded; ` +
		`python3 -c 'import os; os.umask(0); os.close(os.open("created", os.O_CREAT|os.O_WRONLY, 0o6755))'; ls -l`
	out, _, _ := runSandboxed(t, c, sandboxedStart("suid", root, clientSandbox(root), false, script))
	for _, name := range []string{"chmodded", "created"} {
		fi, err := os.Stat(filepath.Join(root, name))
		if err != nil {
			continue
		}
		if fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
			t.Errorf("a sandboxed command left a set-id root file %s (%v) on the host; out %q", name, fi.Mode(), strings.TrimSpace(out))
		}
	}
}
