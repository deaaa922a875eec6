package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommandExecConfigAttacks: a hostile request (a prompt-injected
// client) or command tries to read what the configured default profile
// denies. Each attack must either be refused or leave every denied file
// unreadable.
func TestCommandExecConfigAttacks(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	home, work, secret, shared := filepath.Join(base, "home"), filepath.Join(base, "work"), filepath.Join(base, "secret"), filepath.Join(base, "shared")
	writeFiles(t, work, "a.txt", "sec.env", "sub/deep/x.env", "private/k")
	writeFiles(t, secret, "key", "sub/key2", "docs/d")
	writeFiles(t, shared, "private/k2")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(secret, "sub"), filepath.Join(work, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(`
default_permissions = "dev"
[permissions.dev]
workspace_roots = { "`+shared+`" = true }
[permissions.dev.filesystem]
":root" = "read"
":tmpdir" = "write"
":workspace_roots" = { "." = "write", "**/*.env" = "none", "private" = "none" }
"`+secret+`" = "none"
[permissions.reader.filesystem]
":minimal" = "read"
":workspace_roots" = "read"
[permissions.docs.filesystem]
":minimal" = "read"
":workspace_roots" = { "." = "read", "docs" = "read" }
[permissions.vendored.filesystem]
":root" = "read"
":workspace_roots" = { "." = "write", "vendor" = "none", "vendor/pub" = "write" }
[permissions.shallow]
extends = ":read-only"
[permissions.shallow.filesystem]
glob_scan_max_depth = 1
`), 0o600); err != nil {
		t.Fatal(err)
	}
	c := cxConfigured(t, false, home, work)
	denied := []string{secret + "/key", secret + "/sub/key2", secret + "/docs/d", work + "/sec.env", work + "/sub/deep/x.env", work + "/private/k", shared + "/private/k2"}
	probe := `for f in ` + strings.Join(denied, " ") + `; do cat "$f" >/dev/null 2>&1 && printf 'LEAK:%s\n' "$f"; done; true`
	hlink := `ln ` + secret + `/key h1 2>/dev/null; ln ` + work + `/sec.env h2 2>/dev/null; cat h1 h2 2>/dev/null | grep -q . && echo LEAK:hardlink; ` +
		`ln -s ` + secret + `/sub/key2 s1; cat s1 >/dev/null 2>&1 && echo LEAK:symlink; rm -f h1 h2 s1; true`
	for _, tc := range []struct {
		name string
		kv   []any
	}{
		{"workspaceWrite with a writable root inside a denied dir", []any{"sandboxPolicy", map[string]any{"type": "workspaceWrite", "writableRoots": []string{secret + "/sub"}}}},
		{"workspaceWrite with a file: URI writable root inside a denied dir", []any{"sandboxPolicy", map[string]any{"type": "workspaceWrite", "writableRoots": []string{"file://" + secret + "/sub"}}}},
		{"workspaceWrite with a writable root through a symlink into a denied dir", []any{"sandboxPolicy", map[string]any{"type": "workspaceWrite", "writableRoots": []string{work + "/link"}}}},
		{"workspaceWrite with a denied file as a writable root", []any{"sandboxPolicy", map[string]any{"type": "workspaceWrite", "writableRoots": []string{work + "/sec.env"}}}},
		{":workspace with a denied file as TMPDIR", []any{"permissionProfile", ":workspace", "env", map[string]any{"TMPDIR": work + "/sec.env"}}},
		{"a user profile's subpath grant under a cwd that is a denied dir", []any{"permissionProfile", "docs", "cwd", secret}},
		{"a user profile's subpath grant under a denied dir, HOME and TMPDIR moved", []any{"permissionProfile", "vendored", "env", map[string]any{"HOME": secret, "TMPDIR": secret + "/sub"}}},
		{":workspace with the cwd inside a denied dir", []any{"permissionProfile", ":workspace", "cwd", secret + "/sub"}},
		{":workspace with a relative cwd climbing into a denied dir", []any{"permissionProfile", ":workspace", "cwd", "../secret/sub"}},
		{":workspace with the cwd through a symlink into a denied dir", []any{"permissionProfile", ":workspace", "cwd", "link"}},
		{":workspace with TMPDIR inside a denied dir", []any{"permissionProfile", ":workspace", "env", map[string]any{"TMPDIR": secret + "/sub"}}},
		{"workspaceWrite with TMPDIR inside a denied dir", []any{"sandboxPolicy", map[string]any{"type": "workspaceWrite"}, "env", map[string]any{"TMPDIR": secret + "/sub"}}},
		{"the default profile with TMPDIR inside a denied dir", []any{"env", map[string]any{"TMPDIR": secret + "/sub"}}},
		{"a read-only user profile with the cwd inside a denied dir", []any{"permissionProfile", "reader", "cwd", secret + "/sub"}},
		{"a :workspace_roots subpath deny with the cwd elsewhere", []any{"permissionProfile", ":read-only", "cwd", base}},
		{"a :workspace_roots subpath deny under a configured extra root", []any{"sandboxPolicy", map[string]any{"type": "readOnly"}}},
		{"a user profile with a shallower glob_scan_max_depth", []any{"permissionProfile", "shallow"}},
		{":workspace with cwd /", []any{"permissionProfile", ":workspace", "cwd", "/"}},
		{":danger-full-access", []any{"permissionProfile", ":danger-full-access"}},
		{"externalSandbox", []any{"sandboxPolicy", map[string]any{"type": "externalSandbox", "networkAccess": "enabled"}}},
	} {
		for _, cmd := range []string{probe, hlink} {
			p := map[string]any{"command": []string{"/bin/sh", "-c", cmd}}
			for i := 0; i < len(tc.kv); i += 2 {
				p[tc.kv[i].(string)] = tc.kv[i+1]
			}
			m := c.call("command/exec", p)
			if m["error"] != nil {
				t.Logf("%s: refused: %s", tc.name, errorOf(m))
				continue
			}
			var r struct {
				ExitCode       int
				Stdout, Stderr string
			}
			if err := json.Unmarshal([]byte(result(t, m)), &r); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(r.Stderr, "cannot enforce sandbox") {
				t.Logf("%s: the sandbox refused: %s", tc.name, r.Stderr)
				continue
			}
			if strings.Contains(r.Stdout, "LEAK") || r.ExitCode != 0 {
				t.Errorf("%s: exit %d\n%s%s", tc.name, r.ExitCode, r.Stdout, r.Stderr)
			}
		}
	}
	// A grant the operator wrote below a denied folder of the same profile
	// still works: the check only refuses what the profile does not grant.
	writeFiles(t, work, "vendor/k", "vendor/pub/p")
	got := result(t, c.call("command/exec", map[string]any{"command": []string{"/bin/sh", "-c", "cat vendor/k 2>/dev/null; echo w > vendor/pub/w && cat vendor/pub/p vendor/pub/w"}, "permissionProfile": "vendored"}))
	if !strings.Contains(got, `"stdout":"pw\n"`) {
		t.Errorf("vendored profile: %s", got)
	}
	// A PTY run is sandboxed like a pipe run.
	result(t, c.call("command/exec", map[string]any{"command": []string{"/bin/sh", "-c", probe}, "processId": "tty", "tty": true, "permissionProfile": ":danger-full-access"}))
	if out, _ := c.deltas("tty", "stdout"); strings.Contains(out, "LEAK") {
		t.Errorf("tty :danger-full-access: %s", out)
	}
}

// TestCommandExecConfigWorkspaceInDeniedFolder: the server's own
// workspace may lie inside a folder the default profile denies (deny
// /projects, work in /projects/work); requests anchored there run, while
// a request that anchors itself at another folder of /projects is refused.
func TestCommandExecConfigWorkspaceInDeniedFolder(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	home, projects := filepath.Join(base, "home"), filepath.Join(base, "projects")
	work, other := filepath.Join(projects, "work"), filepath.Join(projects, "other")
	writeFiles(t, work, "a.txt")
	writeFiles(t, other, "o.txt")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(`
default_permissions = "dev"
[permissions.dev.filesystem]
":root" = "read"
":workspace_roots" = { "." = "write" }
"`+projects+`" = "none"
`), 0o600); err != nil {
		t.Fatal(err)
	}
	c := cxConfigured(t, false, home, work)
	probe := []string{"/bin/sh", "-c", "cat " + work + "/a.txt; cat " + other + "/o.txt 2>/dev/null; true"}
	for _, tc := range []struct {
		name string
		kv   []any
	}{
		{"the default profile", nil},
		{"workspaceWrite", []any{"sandboxPolicy", map[string]any{"type": "workspaceWrite"}}},
		{":workspace", []any{"permissionProfile", ":workspace"}},
		{"the default profile by name, in a subfolder", []any{"permissionProfile", "dev", "cwd", work}},
	} {
		p := map[string]any{"command": probe}
		for i := 0; i < len(tc.kv); i += 2 {
			p[tc.kv[i].(string)] = tc.kv[i+1]
		}
		if got := result(t, c.call("command/exec", p)); !strings.Contains(got, `"stdout":"a.txt"`) {
			t.Errorf("%s: %s", tc.name, got)
		}
	}
	for _, tc := range []struct {
		name string
		kv   []any
	}{
		{":workspace elsewhere in the denied folder", []any{"permissionProfile", ":workspace", "cwd", other}},
		{"the default profile by name elsewhere in the denied folder", []any{"permissionProfile", "dev", "cwd", other}},
		{"workspaceWrite with a writable root elsewhere in the denied folder", []any{"sandboxPolicy", map[string]any{"type": "workspaceWrite", "writableRoots": []string{other}}}},
	} {
		p := map[string]any{"command": probe}
		for i := 0; i < len(tc.kv); i += 2 {
			p[tc.kv[i].(string)] = tc.kv[i+1]
		}
		if got := errorOf(c.call("command/exec", p)); !strings.Contains(got, "-32600 command/exec: "+other+" lies inside the denied path "+projects) {
			t.Errorf("%s: %s", tc.name, got)
		}
	}
}

// TestCommandExecConfigKernelKnobs: a request for no sandbox keeps the
// configured deny entries under a full-write sandbox. A uid-0 command
// there must not reach the host kernel's knobs: kernel.core_pattern names
// a program the kernel runs as root outside every namespace, which could
// read the masked files. The probe writes the current value back, so it
// changes nothing even where the write succeeds.
func TestCommandExecConfigKernelKnobs(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("the knobs are writable to root only")
	}
	base := t.TempDir()
	home, work := filepath.Join(base, "home"), filepath.Join(base, "work")
	writeFiles(t, work, "a.txt", "sec.env") // a file to mask: the full-write sandbox exists
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte("default_permissions = \"dev\"\n[permissions.dev.filesystem]\n\":root\" = \"read\"\n\":workspace_roots\" = { \".\" = \"write\", \"**/*.env\" = \"none\" }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := cxConfigured(t, false, home, work)
	probe := `v=$(cat /proc/sys/kernel/core_pattern) && printf '%s\n' "$v" 2>/dev/null > /proc/sys/kernel/core_pattern && echo core_pattern; ` +
		`(exec 3>/proc/sysrq-trigger) 2>/dev/null && echo sysrq; ` +
		`awk '$5=="/sys"{o=$6} END{print "sys:" substr(o,1,2)}' /proc/self/mountinfo`
	for _, kv := range [][]any{
		{"permissionProfile", ":danger-full-access"},
		{"sandboxPolicy", map[string]any{"type": "dangerFullAccess"}},
		{"sandboxPolicy", map[string]any{"type": "workspaceWrite", "writableRoots": []string{"/"}}},
	} {
		got := result(t, c.call("command/exec", map[string]any{"command": []string{"/bin/sh", "-c", probe}, kv[0].(string): kv[1]}))
		if !strings.Contains(got, `"stdout":"sys:ro\n"`) {
			t.Errorf("%v: %s", kv, got)
		}
	}
}
