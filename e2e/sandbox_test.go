package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// workspaceSandbox is the sandbox object of docs/protocol.md §8.1 for a
// workspace-write turn, without the /tmp and $TMPDIR entries so that the
// rest of /tmp counts as "outside".
func workspaceSandbox(root string, network string) map[string]any {
	special := func(kind string, extra ...string) map[string]any {
		v := map[string]any{"kind": kind}
		if len(extra) > 0 {
			v["subpath"] = extra[0]
		}
		return map[string]any{"type": "special", "value": v}
	}
	entries := []any{
		map[string]any{"path": special("root"), "access": "read"},
		map[string]any{"path": special("project_roots"), "access": "write"},
	}
	for _, sub := range []string{".git", ".agents", ".codex", ".aws"} {
		entries = append(entries, map[string]any{"path": special("project_roots", sub), "access": "read", "missing_path_behavior": "skip"})
	}
	return map[string]any{
		"permissions": map[string]any{
			"type":        "managed",
			"file_system": map[string]any{"type": "restricted", "entries": entries},
			"network":     network,
		},
		"cwd":                             "file://" + root,
		"workspaceRoots":                  []string{"file://" + root},
		"windowsSandboxLevel":             "disabled",
		"windowsSandboxProxySettingsMode": "reconcile",
		"useLegacyLandlock":               false,
	}
}

func sandboxedStart(id, root string, sb map[string]any, tty bool, script string) map[string]any {
	p := startParams(id, "/bin/bash", "--norc", "-c", script)
	p["cwd"] = "file://" + root
	p["sandbox"] = sb
	p["tty"] = tty
	return p
}

// runSandboxed starts a sandboxed process and returns its output, exit code
// and the exited notification's sandboxDenied.
func runSandboxed(t *testing.T, c *client, p map[string]any) (string, int, bool) {
	t.Helper()
	return runSandboxedWithin(t, c, p, 20*time.Second)
}

// runSandboxedWithin is runSandboxed waiting up to d for the close.
func runSandboxedWithin(t *testing.T, c *client, p map[string]any, d time.Duration) (string, int, bool) {
	t.Helper()
	var res map[string]string
	c.ok("process/start", p, &res)
	if res["sandboxType"] != "linuxSeccomp" {
		t.Fatalf("sandboxType %q, want linuxSeccomp", res["sandboxType"])
	}
	id := p["processId"].(string)
	evs := c.events(id, d)
	var out strings.Builder
	code, denied := -1, false
	for _, e := range evs {
		switch e.Method {
		case "process/output":
			out.WriteString(decodeChunk(e.Params["chunk"].(string)))
		case "process/exited":
			code = int(e.Params["exitCode"].(float64))
			denied = e.Params["sandboxDenied"].(bool)
		}
	}
	if len(evs) == 0 || evs[len(evs)-1].Method != "process/closed" {
		t.Fatalf("%s did not close: %v", id, evs)
	}
	return out.String(), code, denied
}

func decodeChunk(s string) string {
	var b []byte
	_ = json.Unmarshal([]byte(`"`+s+`"`), &b)
	return string(b)
}

func TestSandboxedProcesses(t *testing.T) {
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(root, ".git", "config"), []byte("orig\n"), 0o644)
	outside := filepath.Join(filepath.Dir(root), fmt.Sprintf("outside-%d", time.Now().UnixNano()))
	sb := workspaceSandbox(root, "restricted")

	t.Run("write inside succeeds", func(t *testing.T) {
		out, code, denied := runSandboxed(t, c, sandboxedStart("in", root, sb, false, "echo hi > inside.txt && cat inside.txt"))
		if code != 0 || denied || out != "hi\n" {
			t.Fatalf("code %d denied %v out %q", code, denied, out)
		}
	})
	t.Run("write outside is a denial", func(t *testing.T) {
		out, code, denied := runSandboxed(t, c, sandboxedStart("out", root, sb, false, "echo x > "+outside))
		if code == 0 || !denied || !strings.Contains(out, "Read-only file system") {
			t.Fatalf("code %d denied %v out %q", code, denied, out)
		}
		if _, err := os.Stat(outside); err == nil {
			t.Fatalf("%s was created", outside)
		}
		var rd readRes
		c.ok("process/read", map[string]any{"processId": "out"}, &rd)
		if !rd.SandboxDenied {
			t.Fatalf("process/read disagrees: %+v", rd)
		}
	})
	t.Run(".git is protected", func(t *testing.T) {
		_, code, _ := runSandboxed(t, c, sandboxedStart("git", root, sb, false, "echo evil > .git/config"))
		if b, _ := os.ReadFile(filepath.Join(root, ".git", "config")); code == 0 || string(b) != "orig\n" {
			t.Fatalf("code %d, .git/config now %q", code, b)
		}
	})
	t.Run("pty works", func(t *testing.T) {
		out, code, _ := runSandboxed(t, c, sandboxedStart("pty", root, sb, true, "stty size; exit 3"))
		if code != 3 || !strings.Contains(out, "24 80") {
			t.Fatalf("code %d out %q", code, out)
		}
	})
	t.Run("network", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			for {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				conn.Close()
			}
		}()
		port := ln.Addr().(*net.TCPAddr).Port
		script := fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && echo connected", port)
		out, code, _ := runSandboxed(t, c, sandboxedStart("net-off", root, sb, false, script))
		if code == 0 || !strings.Contains(out, "Operation not permitted") {
			t.Fatalf("network off: code %d out %q", code, out)
		}
		out, code, _ = runSandboxed(t, c, sandboxedStart("net-on", root, workspaceSandbox(root, "enabled"), false, script))
		if code != 0 || !strings.Contains(out, "connected") {
			t.Fatalf("network on: code %d out %q", code, out)
		}
	})
	t.Run("interrupt gives 130", func(t *testing.T) {
		p := sandboxedStart("int", root, sb, false, "echo ready; sleep 1000")
		c.ok("process/start", p, nil)
		waitOutput(t, c, "int", "ready")
		c.ok("process/signal", map[string]any{"processId": "int", "signal": "interrupt"}, nil)
		evs := c.events("int", 10*time.Second)
		for _, e := range evs {
			if e.Method == "process/exited" && int(e.Params["exitCode"].(float64)) != 130 {
				t.Fatalf("exit %v after interrupt, want 130", e.Params["exitCode"])
			}
		}
	})
	t.Run("protected metadata is not created", func(t *testing.T) {
		_, code, _ := runSandboxed(t, c, sandboxedStart("codex", root, sb, false, "mkdir .codex && echo made"))
		if _, err := os.Stat(filepath.Join(root, ".codex")); code == 0 || err == nil {
			t.Fatalf("mkdir .codex: code %d, stat err %v", code, err)
		}
	})
	t.Run("fs calls", func(t *testing.T) {
		c.ok("fs/writeFile", map[string]any{"path": "file://" + filepath.Join(root, "f.txt"), "dataBase64": "aGkK", "sandbox": sb}, nil)
		if b, _ := os.ReadFile(filepath.Join(root, "f.txt")); string(b) != "hi\n" {
			t.Fatalf("sandboxed write inside: %q", b)
		}
		c.fail("fs/writeFile", map[string]any{"path": "file://" + outside, "dataBase64": "aGkK", "sandbox": sb}, -32603, "Read-only file system (os error 30)")
		disabled := map[string]any{"permissions": map[string]any{"type": "disabled"}}
		c.ok("fs/writeFile", map[string]any{"path": "file://" + outside, "dataBase64": "aGkK", "sandbox": disabled}, nil)
		os.Remove(outside)
	})
}

// A protected path reached through a symlink inside the writable root cannot
// be enforced: the command fails with the reason, and nothing is written.
func TestSandboxSymlinkRefusal(t *testing.T) {
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()
	root := t.TempDir()
	_ = os.MkdirAll(filepath.Join(root, "decoy"), 0o755)
	_ = os.WriteFile(filepath.Join(root, "decoy", "config.toml"), []byte("orig\n"), 0o644)
	if err := os.Symlink("decoy", filepath.Join(root, ".codex")); err != nil {
		t.Fatal(err)
	}
	out, code, _ := runSandboxed(t, c, sandboxedStart("sym", root, workspaceSandbox(root, "restricted"), false, "echo evil > .codex/config.toml"))
	if code != 1 || !strings.Contains(out, "cannot enforce sandbox read-only path") || strings.Contains(out, "panic") {
		t.Fatalf("code %d out %q", code, out)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "decoy", "config.toml")); string(b) != "orig\n" {
		t.Fatalf("config.toml now %q", b)
	}
}

func TestSandboxDenyGlobAndBadPolicy(t *testing.T) {
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()
	root := t.TempDir()
	_ = os.WriteFile(filepath.Join(root, "secret.env"), []byte("TOKEN=x\n"), 0o644)
	_ = os.WriteFile(filepath.Join(root, "plain.txt"), []byte("ok\n"), 0o644)
	sb := workspaceSandbox(root, "restricted")
	fsys := sb["permissions"].(map[string]any)["file_system"].(map[string]any)
	fsys["entries"] = append(fsys["entries"].([]any), map[string]any{"path": map[string]any{"type": "glob_pattern", "pattern": "**/*.env"}, "access": "deny"})
	out, code, denied := runSandboxed(t, c, sandboxedStart("glob", root, sb, false, "cat plain.txt; cat secret.env"))
	if code == 0 || !denied || !strings.Contains(out, "ok\n") || strings.Contains(out, "TOKEN") {
		t.Fatalf("deny glob: code %d denied %v out %q", code, denied, out)
	}
	// A glob can only deny: a contradictory profile is refused.
	fsys["entries"] = []any{map[string]any{"path": map[string]any{"type": "glob_pattern", "pattern": "*.env"}, "access": "write"}}
	c.fail("process/start", sandboxedStart("bad", root, sb, false, "true"), -32602, "glob file system permissions only support deny-read entries")
	c.fail("fs/writeFile", map[string]any{"path": "file://" + filepath.Join(root, "x"), "dataBase64": "", "sandbox": sb}, -32600, "glob file system permissions only support deny-read entries")
}
