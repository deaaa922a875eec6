package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// cxConfigured starts a server in dir with CODEX_HOME=home over stdio or
// WebSocket, with args after its --listen, and performs the handshake with
// experimentalApi.
func cxConfigured(t *testing.T, ws bool, home, dir string, args ...string) *cx {
	t.Helper()
	listen := "stdio"
	if ws {
		listen = "ws://127.0.0.1:0"
	}
	cmd := exec.Command(binary, append([]string{"exec-server", "--listen", listen}, args...)...)
	cmd.Env = []string{raceEnv, "PATH=/usr/bin:/bin", "HOME=" + os.Getenv("HOME"), "CODEX_HOME=" + home}
	cmd.Dir = dir
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		if ws {
			_ = cmd.Process.Signal(os.Interrupt)
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Errorf("server did not exit")
		}
		if t.Failed() {
			t.Logf("server stderr:\n%s", stderr.String())
		}
	})
	c := &cx{t: t, in: make(chan map[string]any, 1024), nextID: 1}
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 1<<20)
	if ws {
		if !sc.Scan() {
			t.Fatalf("no URL; stderr:\n%s", stderr.String())
		}
		ctx, cancel := context.WithCancel(context.Background())
		conn, _, err := websocket.Dial(ctx, strings.TrimSpace(sc.Text()), nil)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		conn.SetReadLimit(-1)
		c.write = func(l string) { _ = conn.Write(ctx, websocket.MessageText, []byte(l)) }
		t.Cleanup(func() { conn.Close(websocket.StatusNormalClosure, ""); cancel() })
		go func() {
			defer close(c.in)
			for {
				_, data, err := conn.Read(ctx)
				if err != nil {
					return
				}
				var m map[string]any
				if json.Unmarshal(data, &m) == nil {
					c.in <- m
				}
			}
		}()
	} else {
		c.write = func(l string) { _, _ = in.Write([]byte(l + "\n")) }
		go func() {
			defer close(c.in)
			for sc.Scan() {
				var m map[string]any
				if json.Unmarshal(sc.Bytes(), &m) == nil {
					c.in <- m
				}
			}
		}()
	}
	c.call("initialize", map[string]any{"clientName": "e2e", "capabilities": map[string]any{"experimentalApi": true}})
	c.write(`{"method":"initialized","params":{}}`)
	return c
}

// writeFiles creates each path (relative to dir) with its name as content.
func writeFiles(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, n := range names {
		p := filepath.Join(dir, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(filepath.Base(n)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCommandExecConfig: the permission profiles of config.toml — the
// configured default, user profiles with extends, the undefined-profile
// error — and the configured deny-read entries that an explicit
// permissionProfile or sandboxPolicy keeps (the reference drops them).
func TestCommandExecConfig(t *testing.T) {
	t.Parallel()
	for _, tr := range []string{"stdio", "ws"} {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			base := t.TempDir()
			home, work, secret := filepath.Join(base, "home"), filepath.Join(base, "work"), filepath.Join(base, "secret")
			writeFiles(t, work, "a.txt", "sec.env", "sub/x.env", "sub/b.txt")
			writeFiles(t, secret, "key")
			if err := os.MkdirAll(home, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(`
model = "ignored by the executor"
default_permissions = "dev"
[permissions.dev.filesystem]
":root" = "read"
":workspace_roots" = { "." = "write", "**/*.env" = "none" }
"`+secret+`" = "none"
[permissions.dev.network]
enabled = false
[permissions.net]
extends = ":read-only"
network = { enabled = true }
`), 0o600); err != nil {
				t.Fatal(err)
			}
			c := cxConfigured(t, tr == "ws", home, work)
			probe := `for f in a.txt sec.env sub/x.env ` + secret + `/key; do cat $f >/dev/null 2>&1 && printf '%s ' "r:$f" || printf '%s ' "-:$f"; done; ` +
				`touch w.$$ 2>/dev/null && printf "w " || printf "ro "; printf "net=${CODEX_SANDBOX_NETWORK_DISABLED-unset}"`
			run := func(kv ...any) string {
				t.Helper()
				p := map[string]any{"command": []string{"/bin/sh", "-c", probe}}
				for i := 0; i < len(kv); i += 2 {
					p[kv[i].(string)] = kv[i+1]
				}
				var r struct{ Stdout string }
				if err := json.Unmarshal([]byte(result(t, c.call("command/exec", p))), &r); err != nil {
					t.Fatal(err)
				}
				return strings.ReplaceAll(r.Stdout, secret, "S")
			}
			const denied = "r:a.txt -:sec.env -:sub/x.env -:S/key "
			for _, tc := range []struct {
				name string
				kv   []any
				want string
			}{
				{"configured default", nil, denied + "w net=1"},
				{":workspace", []any{"permissionProfile", ":workspace"}, denied + "w net=1"},
				{":read-only", []any{"permissionProfile", ":read-only"}, denied + "ro net=1"},
				{"user profile extends :read-only", []any{"permissionProfile", "net"}, denied + "ro net=unset"},
				{":danger-full-access", []any{"permissionProfile", ":danger-full-access"}, denied + "w net=unset"},
				{"readOnly policy", []any{"sandboxPolicy", map[string]any{"type": "readOnly"}}, denied + "ro net=1"},
				{"workspaceWrite policy with the secret as a writable root", []any{"sandboxPolicy", map[string]any{"type": "workspaceWrite", "writableRoots": []string{secret}}}, denied + "w net=1"},
				{"dangerFullAccess policy", []any{"sandboxPolicy", map[string]any{"type": "dangerFullAccess"}}, denied + "w net=unset"},
				{"externalSandbox policy", []any{"sandboxPolicy", map[string]any{"type": "externalSandbox"}}, denied + "w net=1"},
			} {
				if got := run(tc.kv...); got != tc.want {
					t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
				}
			}
			// A request anchored in a subdirectory still cannot read the
			// configured workspace's denied files.
			sub := `cat ../sec.env >/dev/null 2>&1 && printf r || printf %s -; cat x.env >/dev/null 2>&1 && printf r || printf %s -; cat b.txt`
			got := result(t, c.call("command/exec", map[string]any{"command": []string{"/bin/sh", "-c", sub}, "cwd": "sub", "permissionProfile": ":workspace"}))
			if !strings.Contains(got, `"stdout":"--b.txt"`) {
				t.Errorf("cwd sub with :workspace: %s", got)
			}
			if got := errorOf(c.call("command/exec", map[string]any{"command": []string{"true"}, "permissionProfile": "nosuch"})); got != "-32600 invalid permission profile: default_permissions refers to undefined profile `nosuch`" {
				t.Errorf("undefined profile: %s", got)
			}
		})
	}
}

// TestConfigErrorIsFatal: a config.toml the Codex CLI refuses stops the
// server at start-up with the file and line (syntax) or the key (meaning):
// an error in the default profile (the CLI compiles that one), a default
// that names no profile.
func TestConfigErrorIsFatal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ text, want string }{
		{"default_permissions = \"dev\n", "config.toml:1: "},
		{"default_permissions = \"dev\"\n[permissions.dev.filesystem]\n\"rel/x\" = \"read\"\n", `config.toml: permissions.dev.filesystem."rel/x": filesystem path ` + "`rel/x`" + ` must be absolute`},
		{"default_permissions = \"nosuch\"\n[permissions.dev]\n", "default_permissions refers to undefined profile `nosuch`"},
	} {
		home := t.TempDir()
		if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(tc.text), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(binary, "exec-server", "--listen", "stdio")
		cmd.Env = []string{raceEnv, "PATH=/usr/bin:/bin", "CODEX_HOME=" + home}
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		if code != 1 || stdout.Len() != 0 || !strings.Contains(stderr.String(), filepath.Join(home, "")) || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 1 and …%s…", tc.text, code, stdout.String(), stderr.String(), tc.want)
		}
	}
}
