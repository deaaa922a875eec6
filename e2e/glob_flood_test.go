package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A sandboxed command plants files that a deny-read glob matches, so
// that the expansion of the glob in every later request fails
// (docs/sandbox.md §3.5). Each flood below is made by a command in the
// workspace; the host then writes a secret among the planted files. Every
// later request must still run, and still not read the secret.
var globFloods = []struct {
	name, script string
	secrets      []string // relative to the workspace, written after the flood
}{
	// The reproduction: more matches than the old cap of 8192,
	// directly in the workspace root.
	{"root", `seq 0 8199 | sed 's/$/.env/' | xargs touch`, []string{"zz-real.env"}},
	{"folder", `mkdir junk && cd junk && seq 0 8199 | sed 's/$/.env/' | xargs touch`, []string{"junk/real.env"}},
	{"folders", `seq 0 8199 | sed 's|^|m/d|' | xargs mkdir -p && seq 0 8199 | sed 's|^|m/d|; s|$|/x.env|' | xargs touch`, []string{"m/d1/real.env"}},
	// A tree deeper than PATH_MAX: its paths cannot be walked by name.
	// It is built from the inside out, each step a short rename.
	{"deep", `n=$(printf '%0200d' 0); mkdir x && : > x/deep.env && for i in $(seq 25); do mkdir y && mv x y/$n && mv y x || exit 1; done; mv x deep`, []string{"deep/" + strings.Repeat(strings.Repeat("0", 200)+"/", 5) + "real.env"}},
	// A planted symlink named like a secret: following it would mask
	// what it points to (the shell), refusing it fails every request.
	{"symlink", `ln -s /bin/sh evil.env && ln -s / root.env && mkdir s && ln -s /etc s/etc.env`, []string{"real.env"}},
}

// TestGlobFloodCommandExec: the floods under the configured default
// profile (`**/*.env` denied in the workspace) of `command/exec`. After
// each, a request of the default profile in the workspace and a
// `:read-only` request anchored elsewhere (which keeps the workspace's
// denies) both run, can use the workspace, and read no secret.
func TestGlobFloodCommandExec(t *testing.T) {
	t.Parallel()
	for _, fl := range globFloods {
		t.Run(fl.name, func(t *testing.T) {
			t.Parallel()
			base := t.TempDir()
			home, work, other := filepath.Join(base, "home"), filepath.Join(base, "work"), filepath.Join(base, "other")
			writeFiles(t, work, "a.txt", "old.env")
			writeFiles(t, other, "o.txt")
			if err := os.MkdirAll(home, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(`
default_permissions = "dev"
[permissions.dev.filesystem]
":root" = "read"
":workspace_roots" = { "." = "write", "**/*.env" = "none" }
`), 0o600); err != nil {
				t.Fatal(err)
			}
			c := cxConfigured(t, false, home, work)
			flood := floodExec(t, c, map[string]any{"command": []string{"/bin/sh", "-c", fl.script}, "timeoutMs": 90000})
			if flood.ExitCode != 0 {
				t.Fatalf("the flood itself failed: %+v", flood)
			}
			secrets := append([]string{"old.env"}, fl.secrets...)
			for _, s := range fl.secrets {
				writeSecret(t, work, s)
			}
			probe := "cat a.txt && echo written > out.txt && cat out.txt; for f in " + strings.Join(secrets, " ") + "; do cat $f; done 2>/dev/null; true"
			for _, req := range []map[string]any{
				{"command": []string{"/bin/sh", "-c", probe}},
				// The workspace is not this request's: it may be masked whole.
				{"command": []string{"/bin/sh", "-c", "cat o.txt; cd " + work + " 2>/dev/null && { " + probe + "; }; true"}, "cwd": other, "permissionProfile": ":read-only"},
			} {
				start := time.Now()
				m := c.wait(c.send("command/exec", req), 60*time.Second)
				took := time.Since(start)
				if m["error"] != nil {
					t.Fatalf("after the flood: %s", errorOf(m))
				}
				var r execOut
				if err := json.Unmarshal([]byte(result(t, m)), &r); err != nil {
					t.Fatal(err)
				}
				t.Logf("%v: a request after the flood took %v", req["permissionProfile"], took)
				if strings.Contains(r.Stdout, "TOPSECRET") || strings.Contains(r.Stdout+r.Stderr, "cannot enforce") || r.ExitCode != 0 {
					t.Errorf("after the flood: %+v", r)
				}
				if req["permissionProfile"] == nil && (!strings.Contains(r.Stdout, "a.txt") || !strings.Contains(r.Stdout, "written")) {
					t.Errorf("the workspace is no longer usable: %+v", r)
				}
				if req["permissionProfile"] != nil && !strings.Contains(r.Stdout, "o.txt") {
					t.Errorf("the request's own folder is not readable: %+v", r)
				}
			}
		})
	}
}

// execOut is the result of a command/exec.
type execOut struct {
	ExitCode       int
	Stdout, Stderr string
}

// floodExec runs a command/exec, waiting as long as a flood may take,
// and decodes its result.
func floodExec(t *testing.T, c *cx, p map[string]any) execOut {
	t.Helper()
	var r execOut
	if err := json.Unmarshal([]byte(result(t, c.wait(c.send("command/exec", p), 100*time.Second))), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestGlobFloodSandboxCLI: the same floods through `codex sandbox` with a
// profile that denies `**/*.env`.
func TestGlobFloodSandboxCLI(t *testing.T) {
	t.Parallel()
	for _, fl := range globFloods {
		t.Run(fl.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			writeFiles(t, dir, "a.txt")
			prof := denyProfile(t, false, []string{"**/*.env"}, nil)
			if out, code := sandboxCLI(t, dir, "--profile-json", prof, "--", "sh", "-c", fl.script); code != 0 {
				t.Fatalf("the flood itself failed: %d %s", code, out)
			}
			for _, s := range fl.secrets {
				writeSecret(t, dir, s)
			}
			out, code := sandboxCLI(t, dir, "--profile-json", prof, "--", "sh", "-c", "cat a.txt; cat "+strings.Join(fl.secrets, " ")+" 2>/dev/null; true")
			if code != 0 || strings.Contains(out, "TOPSECRET") || !strings.Contains(out, "a.txt") {
				t.Errorf("after the flood: exit %d\n%s", code, out)
			}
		})
	}
}

// TestGlobFloodProcessStart: the folder flood through `process/start`
// with a sandbox that denies `**/*.env`.
func TestGlobFloodProcessStart(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()
	root := t.TempDir()
	writeFiles(t, root, "a.txt")
	sb := workspaceSandbox(root, "restricted")
	fsys := sb["permissions"].(map[string]any)["file_system"].(map[string]any)
	fsys["entries"] = append(fsys["entries"].([]any), map[string]any{"path": map[string]any{"type": "glob_pattern", "pattern": "**/*.env"}, "access": "deny"})
	var secrets []string
	for i, fl := range globFloods {
		// As long as floodExec waits: the folders flood (16 400 sandboxed
		// execs) took 27 s beside two loaded suites here, past the 20 s
		// of runSandboxed, which bounds a hang, not the flood.
		if out, code, _ := runSandboxedWithin(t, c, sandboxedStart("flood"+itoa(i), root, sb, false, "mkdir f"+itoa(i)+" && cd f"+itoa(i)+" && "+fl.script), 100*time.Second); code != 0 {
			t.Fatalf("%s: the flood itself failed: %d %s", fl.name, code, out)
		}
		for _, s := range fl.secrets {
			writeSecret(t, filepath.Join(root, "f"+itoa(i)), s)
			secrets = append(secrets, "f"+itoa(i)+"/"+s)
		}
	}
	out, code, _ := runSandboxed(t, c, sandboxedStart("probe", root, sb, false, "cat a.txt; cat "+strings.Join(secrets, " ")+" 2>/dev/null; true"))
	if code != 0 || strings.Contains(out, "TOPSECRET") || !strings.Contains(out, "a.txt") {
		t.Errorf("after the floods: exit %d\n%s", code, out)
	}
}
