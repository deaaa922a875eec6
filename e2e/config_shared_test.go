package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// sharedConfig is a config.toml that the Codex CLI 0.169.0 accepts
// (`codex features list` loads it) and that exec-server cannot honour in
// full: a profile whose network a proxy narrows to some domains, and one
// with a relative path, which the CLI does not compile unless it is the
// default.
const sharedConfig = `model = "gpt-5-codex"
approval_policy = "on-request"
[features]
network_proxy = true
[permissions.dev]
extends = ":workspace"
[permissions.dev.network]
enabled = true
domains = { "api.example.com" = "allow", "evil.example.com" = "deny" }
[permissions.rel.filesystem]
":root" = "read"
"rel/x" = "read"
`

// writeHome returns a CODEX_HOME holding config.toml with text.
func writeHome(t *testing.T, text string) string {
	t.Helper()
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

// TestConfigSharedWithCodexCLI is failure 5 of issue 18: a config.toml the
// Codex CLI accepts, with `[permissions.dev.network]` enabled and narrowed
// to `domains`, stopped exec-server at start-up although process/start
// never uses it. Now the server starts and runs process/start and
// command/exec as usual. With the network_proxy feature the profile runs
// (its network through a proxy of its own: issue 21); without it, the
// server warns once naming the key, and refuses only the requests that
// use the profile, naming the key and the gate (the Codex CLI silently
// gives them the whole network); as the default, that is every
// command/exec without its own profile.
func TestConfigSharedWithCodexCLI(t *testing.T) {
	t.Parallel()
	for _, gate := range []bool{true, false} {
		for _, asDefault := range []bool{false, true} {
			text := sharedConfig
			if !gate {
				text = strings.Replace(text, "[features]\nnetwork_proxy = true\n", "", 1)
			}
			if asDefault {
				text = "default_permissions = \"dev\"\n" + text
			}
			home, work := writeHome(t, text), t.TempDir()
			s := startServerWith(t, binary, func(cmd *exec.Cmd) {
				cmd.Env = append(cmd.Env, "CODEX_HOME="+home)
				cmd.Dir = work
			})
			warned := 1
			if gate {
				warned = 0
			}
			if n := strings.Count(s.stderr.String(), "permissions.dev.network.domains"); n != warned {
				t.Errorf("gate %v default %v: %d log lines name permissions.dev.network.domains, want %d:\n%s", gate, asDefault, n, warned, s.stderr.String())
			}
			c := dial(t, s.URL, nil)
			c.ok("initialize", map[string]any{"clientName": "e2e", "capabilities": map[string]any{"experimentalApi": true}}, nil)
			c.sendRaw(`{"method":"initialized","params":{}}`)
			if out, code := c.run("p", startParams("p", "echo", "ok")); out != "ok\n" || code != 0 {
				t.Errorf("process/start: %q, exit %d", out, code)
			}
			narrowed := "invalid permission profile: " + filepath.Join(home, "config.toml") +
				": permissions.dev.network.domains: narrows the network through a proxy, which needs the feature gate: " +
				"set `[features] network_proxy = true` in config.toml (or pass --enable network_proxy) to run it, or remove the key, or set enabled = false"
			cmdExec := func(kv ...any) response {
				p := map[string]any{"command": []string{"/bin/sh", "-c", "echo run"}}
				for i := 0; i < len(kv); i += 2 {
					p[kv[i].(string)] = kv[i+1]
				}
				return c.call("command/exec", p)
			}
			runs := func(what string, r response) {
				t.Helper()
				if r.Error != nil || !strings.Contains(string(r.Result), `"stdout":"run\n"`) {
					t.Errorf("gate %v default %v, %s: %s %+v", gate, asDefault, what, r.Result, r.Error)
				}
			}
			if gate {
				runs("dev", cmdExec("permissionProfile", "dev"))
			} else {
				assertError(t, cmdExec("permissionProfile", "dev"), -32600, narrowed)
			}
			assertError(t, cmdExec("permissionProfile", "rel"), -32600, "invalid permission profile: "+filepath.Join(home, "config.toml")+
				`: permissions.rel.filesystem."rel/x": filesystem path `+"`rel/x`"+` must be absolute, use `+"`~/...`"+`, or start with `+"`:`")
			runs(":read-only", cmdExec("permissionProfile", ":read-only"))
			if r := cmdExec(); asDefault && !gate {
				assertError(t, r, -32600, narrowed)
			} else {
				runs("the default", r)
			}
		}
	}
}

// TestConfigSharedOtherCommands: `codex sandbox` (which reads config.toml
// only for --permissions-profile) and exec-mcp-server (which reads it for
// the network of its calls, docs/shell-tool.md §3.6), run with the same
// CODEX_HOME: the shared file stops neither.
func TestConfigSharedOtherCommands(t *testing.T) {
	home := writeHome(t, "default_permissions = \"dev\"\n"+sharedConfig)
	cmd := exec.Command(binary, "sandbox", "--", "sh", "-c", "echo ok")
	cmd.Dir = t.TempDir()
	cmd.Env = []string{raceEnv, "PATH=/usr/bin:/bin", "CODEX_HOME=" + home}
	if out, err := cmd.CombinedOutput(); err != nil || string(out) != "ok\n" {
		t.Errorf("codex sandbox: %q %v", out, err)
	}
	m := startMCPWith(t, []string{"CODEX_HOME=" + home})
	m.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if l := m.recv(t); !strings.Contains(l, `"name":"shell"`) {
		t.Errorf("exec-mcp-server tools/list: %s", l)
	}
}

// TestConfigFlags: -c, --enable, --disable and --strict-config with the
// Codex CLI 0.169.0's texts and exit status 1, as probed on its binary
// (docs/operations.md §7.1), and a TOML syntax error that stays fatal.
func TestConfigFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file string // "" for none
		args []string
		code int
		want string // on stderr
	}{
		{"", []string{"--enable", "bogus_feature"}, 1, "codex: Unknown feature flag: bogus_feature\n"},
		{"", []string{"--disable", "bogus"}, 1, "codex: Unknown feature flag: bogus\n"},
		{"", []string{"--enable", "shell_tool", "--disable", "connectors"}, 0, "feature `shell_tool` has no effect on the exec-server"},
		{"", []string{"-c", "foo"}, 1, "codex: Invalid override (missing '='): foo\n"},
		{"", []string{"-c", "=x"}, 1, "codex: Empty key in override: =x\n"},
		{"", []string{"-c", "model=o3"}, 0, "`model` is not read by the exec-server"},
		{"", []string{"--strict-config", "-c", "model=o3", "-c", "zzz_unknown=1"}, 1, "codex: unknown configuration field `zzz_unknown` in -c/--config override\n"},
		{"", []string{"--strict-config", "-c", "features.zzz=true"}, 1, "codex: unknown configuration field `features.zzz` in -c/--config override\n"},
		{"model = \"x\"\nzzz_unknown = 1\n", []string{"--strict-config"}, 1, "config.toml:2:1: unknown configuration field `zzz_unknown`\n"},
		{"[features]\n  zzz = true\n", []string{"--strict-config"}, 1, "config.toml:2:3: unknown configuration field `features.zzz`\n"},
		{"model = \"x\"\nzzz_unknown = 1\n[features]\nzzz = true\n", nil, 0, ""},
		{sharedConfig, []string{"--strict-config"}, 0, ""},
		{"model = [\n", nil, 1, "config.toml:1: unexpected EOF"},
	} {
		env := []string{"CODEX_HOME=" + t.TempDir()}
		if tc.file != "" {
			env[0] = "CODEX_HOME=" + writeHome(t, tc.file)
		}
		stdout, stderr, code := runCLI(t, env, append([]string{"exec-server", "--listen", "stdio"}, tc.args...)...)
		if code != tc.code || stdout != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q %q: exit %d, stdout %q, stderr:\n%s\nwant exit %d and …%s…", tc.file, tc.args, code, stdout, stderr, tc.code, tc.want)
		}
	}
}

// TestConfigOverridesHonoured: -c sets the permissions command/exec uses,
// over the file; a -c that makes a profile unusable behaves as the file.
func TestConfigOverridesHonoured(t *testing.T) {
	t.Parallel()
	home, work := writeHome(t, "default_permissions = \":read-only\"\n"), t.TempDir()
	c := cxConfigured(t, false, home, work, "-c", `permissions.w.filesystem={":root"="read", ":workspace_roots"={"."="write"}}`,
		"-c", "default_permissions=w", "-c", `permissions.n.filesystem.":root"=read`, "-c", `permissions.n.network={enabled=true, mode="limited"}`)
	var r struct{ ExitCode int }
	if err := json.Unmarshal([]byte(result(t, c.call("command/exec", map[string]any{"command": []string{"touch", "made"}}))), &r); err != nil || r.ExitCode != 0 {
		t.Errorf("touch under the overridden default: %+v %v", r, err)
	}
	if _, err := os.Stat(filepath.Join(work, "made")); err != nil {
		t.Error(err)
	}
	if got := errorOf(c.call("command/exec", map[string]any{"command": []string{"true"}, "permissionProfile": "n"})); !strings.Contains(got, "permissions.n.network.mode: narrows the network through a proxy") {
		t.Errorf("profile n: %s", got)
	}
}
