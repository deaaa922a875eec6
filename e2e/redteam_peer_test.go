package e2e

import (
	"strings"
	"testing"
)

// Red team (docs/sandbox.md §7), a variant of the peer check: the
// peer check refuses only the sandboxes this server started itself. A
// command run with `codex sandbox --network` (the same helper, the same
// promise) connects to an exec-server on the same host and is upgraded,
// so it can start an unsandboxed root process through it. The same holds
// for a network-on command of a second exec-server on the host.
//
// Must hold: a peer that runs under any codex-linux-sandbox is refused
// (for example: refuse a local peer whose process is in a PID namespace
// other than the server's, or carries no_new_privs and a seccomp filter,
// or mark every sandbox's cgroup so that all servers recognise it).
func TestRedteamSandboxCLIPeerUpgrades(t *testing.T) {
	s := startServer(t)
	out, _ := sandboxCLI(t, t.TempDir(), "--mode", "workspace-write", "--network", "--",
		"/bin/bash", "--norc", "-c", upgradeScript(s.URL, ""))
	if !strings.Contains(out, "STATUS HTTP/1.1 403") {
		t.Fatalf("a command under `codex sandbox --network` reached the exec-server: got %q, want a 403 status line", out)
	}
}
