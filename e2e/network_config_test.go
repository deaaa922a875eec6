package e2e

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestNetworkConfigErrors: a config.toml whose network table holds a wrong
// type or value loads (exec-server starts and serves), and a command/exec
// under that profile gets the answer the Codex CLI 0.169.0's app-server
// gave the same file (`codex app-server`, command/exec with
// permissionProfile; recorded 2026-11-29): -32600 with serde's text at
// the position of the permissions table. The refusals of a narrowed
// network without the feature gate and of keys this executor does not
// serve are ours (the CLI silently widens the first and ignores the
// others).
func TestNetworkConfigErrors(t *testing.T) {
	t.Parallel()
	const head = "[features]\nnetwork_proxy = true\n[permissions.a.filesystem]\n\":root\" = \"read\"\n[permissions.a.network]\n"
	for _, tc := range []struct {
		text string
		want string // after "invalid permission profile: <config path>" ("!": without the path)
	}{
		{head + "enabled = true\ndomains = { \"a.com\" = \"allow\", \"*\" = \"deny\" }\n",
			"!network proxy constraints are invalid: invalid value for network.denied_domains: * (allowed exact hosts or scoped wildcards like *.example.com or **.example.com)"},
		{head + "enabled = true\nmode = \"bogus\"\n", ":3:2: unknown variant `bogus`, expected `limited` or `full`"},
		{head + "enabled = \"yes\"\n", `:3:2: invalid type: string "yes", expected a boolean`},
		{head + "enabled = true\ndomains = \"x\"\n", `:3:2: invalid type: string "x", expected struct NetworkDomainPermissionsToml`},
		{head + "enabled = true\n[permissions.a.network.domains]\n\"x.com\" = \"maybe\"\n", ":3:2: unknown variant `maybe`, expected `allow` or `deny`"},
		{head + "enabled = true\nenable_socks5 = 0\n", ":3:2: invalid type: integer `0`, expected a boolean"},
		{head + "unix_sockets = 3\n", ":3:2: invalid type: integer `3`, expected struct NetworkUnixSocketPermissionsToml"},
		{head + "dangerously_allow_non_loopback_proxy = 2.5\n", ":3:2: invalid type: floating point `2.5`, expected a boolean"},
		{head + "mitm = { enabled = true }\n", ":3:2: unknown field `enabled`, expected one of `version`, `hooks`, `actions`"},
		{"model = \"x\"\npermissions = { a = { filesystem = { \":root\" = \"read\" }, network = { enabled = true, mode = \"bogus\" } } }\n",
			":2:15: unknown variant `bogus`, expected `limited` or `full`"},
		{strings.Replace(head, "[features]\nnetwork_proxy = true\n", "", 1) + "enabled = true\ndomains = { \"a.com\" = \"allow\" }\n",
			": permissions.a.network.domains: narrows the network through a proxy, which needs the feature gate: set `[features] network_proxy = true` in config.toml (or pass --enable network_proxy) to run it, or remove the key, or set enabled = false"},
		{head + "enabled = true\nenable_socks5_udp = true\n", ": permissions.a.network.enable_socks5_udp: SOCKS5 UDP is not supported by this executor (its proxy relays TCP only); remove the key or set it to false"},
		{head + "enabled = true\nallow_upstream_proxy = true\n", ": permissions.a.network.allow_upstream_proxy: chaining to an upstream proxy is not supported by this executor (allowed traffic would leave directly, not through the upstream proxy); remove the key or set it to false"},
	} {
		for _, asDefault := range []bool{false, true} {
			text := tc.text
			if asDefault {
				text = "default_permissions = \"a\"\n" + text
				tc.want = strings.Replace(tc.want, ":3:2:", ":4:2:", 1)
				tc.want = strings.Replace(tc.want, ":2:15:", ":3:15:", 1)
			}
			home := writeHome(t, text)
			c := cxConfigured(t, false, home, t.TempDir())
			want := "-32600 invalid permission profile: " + filepath.Join(home, "config.toml") + tc.want
			if plain, ok := strings.CutPrefix(tc.want, "!"); ok {
				want = "-32600 invalid permission profile: " + plain
			}
			if got := errorOf(c.call("command/exec", map[string]any{"command": []string{"true"}, "permissionProfile": "a"})); got != want {
				t.Errorf("%q:\n got %s\nwant %s", text, got, want)
			}
			if got := errorOf(c.call("command/exec", map[string]any{"command": []string{"true"}})); asDefault && got != want || !asDefault && got != "<no error>" {
				t.Errorf("%q, the default: %s", text, got)
			}
		}
	}
}

// TestNetworkGateFromCommandLine: --enable network_proxy and -c
// features.network_proxy=true turn the feature on over a file without it
// (a narrowed profile then runs, through its proxy), and the feature is
// not among those logged as having no effect; --disable turns it off over
// the file's.
func TestNetworkGateFromCommandLine(t *testing.T) {
	t.Parallel()
	const profile = "[permissions.a]\nextends = \":workspace\"\n[permissions.a.network]\nenabled = true\ndomains = { \"a.com\" = \"allow\" }\n"
	run := map[string]any{"command": []string{"/bin/sh", "-c", "echo run"}, "permissionProfile": "a"}
	for _, args := range [][]string{{"--enable", "network_proxy"}, {"-c", "features.network_proxy=true"}} {
		c := cxConfigured(t, false, writeHome(t, profile), t.TempDir(), args...)
		if got := c.call("command/exec", run); got["error"] != nil || !strings.Contains(result(t, got), `"stdout":"run\n"`) {
			t.Errorf("%q: %v", args, got)
		}
	}
	c := cxConfigured(t, false, writeHome(t, "[features]\nnetwork_proxy = true\n"+profile), t.TempDir(), "--disable", "network_proxy")
	if got := errorOf(c.call("command/exec", run)); !strings.Contains(got, "permissions.a.network.domains: narrows the network through a proxy, which needs the feature gate") {
		t.Errorf("--disable: %s", got)
	}
	_, stderr, _ := runCLI(t, []string{"CODEX_HOME=" + writeHome(t, profile)}, "exec-server", "--listen", "stdio", "--enable", "network_proxy", "--enable", "shell_tool")
	if !strings.Contains(stderr, "feature `shell_tool` has no effect") || strings.Contains(stderr, "feature `network_proxy` has no effect") {
		t.Errorf("warnings:\n%s", stderr)
	}
}
