package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommandExecSandbox: the default permissions and :read-only deny
// writes; permissionProfile needs experimentalApi; :workspace anchors at
// the request cwd, a workspaceWrite policy at the server's.
func TestCommandExecSandbox(t *testing.T) {
	t.Parallel()
	forEachTransport(t, func(t *testing.T, c *cx) {
		dirA, dirB := t.TempDir(), t.TempDir()
		write := func(dir string) string {
			return "echo x > " + filepath.Join(dir, "f") + " 2>/dev/null && printf wrote || printf denied"
		}
		run := func(p map[string]any) string {
			t.Helper()
			return result(t, c.call("command/exec", p))
		}
		base := func(script string) map[string]any {
			return map[string]any{"command": []string{"/bin/sh", "-c", script}}
		}
		with := func(p map[string]any, kv ...any) map[string]any {
			for i := 0; i < len(kv); i += 2 {
				p[kv[i].(string)] = kv[i+1]
			}
			return p
		}
		for _, tc := range []struct {
			name   string
			params map[string]any
			want   string
		}{
			{"default", base(write(dirA) + `; printf " net=$CODEX_SANDBOX_NETWORK_DISABLED"`), "denied net=1"},
			{"read-only", with(base("printf profile"), "permissionProfile", ":read-only"), "profile"},
			{"read-only write", with(base(write(dirA)), "permissionProfile", ":read-only"), "denied"},
			{"workspace at request cwd", with(base(write(dirA)), "permissionProfile", ":workspace", "cwd", dirA), "wrote"},
			{"policy at server cwd", with(base(write(dirA)), "cwd", dirA, "sandboxPolicy", map[string]any{"type": "workspaceWrite", "excludeSlashTmp": true, "excludeTmpdirEnvVar": true}), "denied"},
			{"policy writable root", with(base(write(dirB)), "cwd", dirA, "sandboxPolicy", map[string]any{"type": "workspaceWrite", "excludeSlashTmp": true, "excludeTmpdirEnvVar": true, "writableRoots": []string{dirB}}), "wrote"},
			{"danger", with(base(write(dirA)+`; printf " net=${CODEX_SANDBOX_NETWORK_DISABLED-unset}"`), "permissionProfile", ":danger-full-access"), "wrote net=unset"},
		} {
			if got := run(tc.params); !strings.Contains(got, `"stdout":"`+tc.want+`"`) {
				t.Errorf("%s: got %s, want stdout %q", tc.name, got, tc.want)
			}
		}
		if _, err := os.Stat(filepath.Join(dirB, "f")); err != nil {
			t.Errorf("the writable root was not written: %v", err)
		}

		plain := cxStdio(t)
		plain.call("initialize", map[string]any{"clientName": "e2e"})
		plain.write(`{"method":"initialized","params":{}}`)
		if got := errorOf(plain.call("command/exec", with(base("printf profile"), "permissionProfile", ":read-only"))); got != "-32600 command/exec.permissionProfile requires experimentalApi capability" {
			t.Errorf("without experimentalApi: %s", got)
		}
		if got := result(t, plain.call("command/exec", base("printf plain"))); !strings.Contains(got, `"stdout":"plain"`) {
			t.Errorf("default permissions without experimentalApi: %s", got)
		}
	})
}
