package config

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/codexec/codex/netproxy"
	"github.com/codexec/codex/sandbox"
)

// netProfile is a config with the network_proxy gate (when gate) and
// profile `a` reading the root, whose network table holds body.
func netProfile(gate bool, body string) string {
	text := "[permissions.a.filesystem]\n\":root\" = \"read\"\n[permissions.a.network]\n" + body + "\n"
	if gate {
		text = "[features]\nnetwork_proxy = true\n" + text
	}
	return text
}

// loadAt writes text as a config file and loads it, returning the path.
func loadAt(t *testing.T, text string, overrides ...string) (*Permissions, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), FileName)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	var opts Options
	for _, o := range overrides {
		ov, err := ParseOverride(o)
		if err != nil {
			t.Fatal(err)
		}
		opts.Overrides = append(opts.Overrides, ov)
	}
	p, err := LoadWith(path, opts)
	if err != nil {
		t.Fatalf("the file must load: %v", err)
	}
	return p, path
}

// TestNetworkValueErrors: a wrong type or value under
// [permissions.<name>.network] loads (the profile is warned about) and
// refuses the requests that use the profile with the Codex CLI's text at
// the CLI's position, as its app-server 0.169.0 answers command/exec
// (recorded: `invalid permission profile: FILE:3:2: <text>`; the
// e2e test TestNetworkConfigErrors replays them through the binary).
func TestNetworkValueErrors(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`enabled = 1`, "invalid type: integer `1`, expected a boolean"},
		{`enabled = -1`, "invalid type: integer `-1`, expected a boolean"},
		{`enabled = 0x10`, "invalid type: integer `16`, expected a boolean"},
		{`enabled = 1e3`, "invalid type: floating point `1000.0`, expected a boolean"},
		{`enabled = "yes"`, `invalid type: string "yes", expected a boolean`},
		{`enabled = "é\"q\t"`, `invalid type: string "é\"q\t", expected a boolean`},
		{`enabled = 2024-01-01`, "invalid type: map, expected a boolean"},
		{`enabled = 12:00:00`, "invalid type: map, expected a boolean"},
		{`enabled = 2024-01-01T00:00:00Z`, "invalid type: map, expected a boolean"},
		{"enabled = true\ndomains = 5", "invalid type: integer `5`, expected struct NetworkDomainPermissionsToml"},
		{"enabled = true\ndomains = \"x\"", `invalid type: string "x", expected struct NetworkDomainPermissionsToml`},
		{"enabled = true\ndomains = { \"a.com\" = true }", "invalid type: boolean `true`, expected string or map"},
		{"enabled = true\ndomains = { \"x.com\" = \"maybe\" }", "unknown variant `maybe`, expected `allow` or `deny`"},
		{"enabled = true\ndomains = { \"a.com\" = \"allow\", \"b.com\" = {} }", "invalid value: map, expected map with a single key"},
		{"enabled = true\ndomains = { \"a.com\" = { allow = 1 } }", "invalid type: integer `1`, expected unit"},
		{"enabled = true\nmode = \"bogus\"", "unknown variant `bogus`, expected `limited` or `full`"},
		{"enabled = true\nmode = \"LIMITED\"", "unknown variant `LIMITED`, expected `limited` or `full`"},
		{"enabled = true\nmode = 1", "invalid type: integer `1`, expected string or map"},
		{"enabled = true\nmode = { limited = {} }", "invalid type: map, expected unit"},
		{"enabled = true\nmode = { limited = 1 }", "invalid type: integer `1`, expected unit"},
		{"enabled = true\nmode = { bogus = 1 }", "unknown variant `bogus`, expected `limited` or `full`"},
		{"enabled = true\nmode = {}", "invalid value: map, expected map with a single key"},
		{`allow_local_binding = "x"`, `invalid type: string "x", expected a boolean`},
		{`enable_socks5 = 0`, "invalid type: integer `0`, expected a boolean"},
		{`enable_socks5_udp = "t"`, `invalid type: string "t", expected a boolean`},
		{`unix_sockets = 3`, "invalid type: integer `3`, expected struct NetworkUnixSocketPermissionsToml"},
		{`unix_sockets = { "/a" = "maybe" }`, "unknown variant `maybe`, expected `allow` or `deny`"},
		{`unix_sockets = { "/a" = 1 }`, "invalid type: integer `1`, expected string or map"},
		{`dangerously_allow_all_unix_sockets = []`, "invalid type: sequence, expected a boolean"},
		{`proxy_url = 1`, "invalid type: integer `1`, expected a string"},
		{`socks_url = true`, "invalid type: boolean `true`, expected a string"},
		{`allow_upstream_proxy = "no"`, `invalid type: string "no", expected a boolean`},
		{`dangerously_allow_non_loopback_proxy = 2.5`, "invalid type: floating point `2.5`, expected a boolean"},
		{`mitm = "x"`, `invalid type: string "x", expected struct NetworkMitmTomlUnchecked`},
		{`mitm = { enabled = true }`, "unknown field `enabled`, expected one of `version`, `hooks`, `actions`"},
		{`mitm = { bogus = 1 }`, "unknown field `bogus`, expected one of `version`, `hooks`, `actions`"},
	} {
		for _, gate := range []bool{true, false} {
			for _, asDefault := range []bool{false, true} {
				text := netProfile(gate, tc.body)
				if asDefault {
					text = "default_permissions = \"a\"\n" + text
				}
				p, path := loadAt(t, text)
				line := 3
				switch {
				case asDefault && gate:
					line = 4
				case !gate && !asDefault:
					line = 1
				case !gate:
					line = 2
				}
				want := path + ":" + strconv.Itoa(line) + ":2: " + tc.want
				_, err := p.Resolve("a", "/w")
				if err == nil || err.Error() != want {
					t.Errorf("%q gate %v default %v:\n got %v\nwant %s", tc.body, gate, asDefault, err, want)
				}
				if !p.Unusable("a") || !slices.ContainsFunc(p.Warnings, func(w string) bool { return strings.Contains(w, tc.want) }) {
					t.Errorf("%q: not warned about: %q", tc.body, p.Warnings)
				}
			}
		}
	}
}

// TestNetworkErrorPosition: the position is where the file first defines
// the permissions table, as the Codex CLI 0.169.0 reports it (recorded
// for each layout).
func TestNetworkErrorPosition(t *testing.T) {
	for _, tc := range []struct{ text, pos string }{
		{"[features]\nnetwork_proxy = true\n[permissions.a.filesystem]\n\":root\" = \"read\"\n[permissions.a.network]\nenabled = true\nmode = \"bogus\"\n", "3:2"},
		{"[features]\nnetwork_proxy = true\n\n\n[permissions.a.network]\nenabled = true\nmode = \"bogus\"\n[permissions.a.filesystem]\n\":root\" = \"read\"\n", "5:2"},
		{"model = \"x\"\npermissions = { a = { filesystem = { \":root\" = \"read\" }, network = { enabled = true, mode = \"bogus\" } } }\n", "2:15"},
		{"model = \"x\"\npermissions.a.filesystem.\":root\" = \"read\"\npermissions.a.network.mode = \"bogus\"\n", "2:1"},
		{"model = \"x\"\n[ permissions . a . network ]\nmode = \"bogus\"\n[permissions.a.filesystem]\n\":root\" = \"read\"\n", "2:3"},
		{"model = \"x\"\n\n[permissions]\n\n[permissions.a.network]\nmode = \"bogus\"\n[permissions.a.filesystem]\n\":root\" = \"read\"\n", "3:1"},
		{"model = \"x\"\n[permissions.a]\nnetwork = { mode = \"bogus\" }\nfilesystem = { \":root\" = \"read\" }\n", "2:2"},
		{"[permissions.b.filesystem]\n\":root\" = \"read\"\n[permissions.a.filesystem]\n\":root\" = \"read\"\n[permissions.a.network]\nmode = \"bogus\"\n", "1:2"},
	} {
		p, path := loadAt(t, tc.text)
		want := path + ":" + tc.pos + ": unknown variant `bogus`, expected `limited` or `full`"
		if _, err := p.Resolve("a", "/w"); err == nil || err.Error() != want {
			t.Errorf("%q:\n got %v\nwant %s", tc.text, err, want)
		}
	}
	// A network that is not a table (recorded too).
	p, path := loadAt(t, "[permissions.a]\nnetwork = 5\n[permissions.a.filesystem]\n\":root\" = \"read\"\n")
	if _, err := p.Resolve("a", "/w"); err == nil || err.Error() != path+":1:2: invalid type: integer `5`, expected struct NetworkToml" {
		t.Errorf("network = 5: %v", err)
	}
	// Only an override defines the table: the key is named instead.
	p, path = loadAt(t, "model = \"x\"\n", `permissions.a.filesystem={":root"="read"}`, `permissions.a.network.mode="bogus"`)
	want := path + ": permissions: unknown variant `bogus`, expected `limited` or `full`"
	if _, err := p.Resolve("a", "/w"); err == nil || err.Error() != want {
		t.Errorf("override:\n got %v\nwant %s", err, want)
	}
}

// TestNetworkGateOn: with the gate, an enabled network resolves to a
// restricted direct network and the proxy with every key's value; the
// defaults are the Codex CLI's (SOCKS5 on, mode full, nothing allowed).
func TestNetworkGateOn(t *testing.T) {
	for _, tc := range []struct {
		body string
		want netproxy.Settings
	}{
		{"enabled = true", netproxy.Settings{Mode: netproxy.ModeFull, EnableSOCKS5: true}},
		{"enabled = true\ndomains = { \"api.example.com\" = \"allow\", \"*.evil.example.com\" = \"deny\" }", netproxy.Settings{
			Domains: map[string]netproxy.Action{"api.example.com": netproxy.Allow, "*.evil.example.com": netproxy.Deny}, Mode: netproxy.ModeFull, EnableSOCKS5: true}},
		{"enabled = true\ndomains = {}", netproxy.Settings{Domains: map[string]netproxy.Action{}, Mode: netproxy.ModeFull, EnableSOCKS5: true}},
		{"enabled = true\nmode = \"limited\"", netproxy.Settings{Mode: netproxy.ModeLimited, EnableSOCKS5: true}},
		{"enabled = true\nmode = \"full\"", netproxy.Settings{Mode: netproxy.ModeFull, EnableSOCKS5: true}},
		{"enabled = true\nallow_local_binding = true", netproxy.Settings{Mode: netproxy.ModeFull, EnableSOCKS5: true, AllowLocalBinding: true}},
		{"enabled = true\nenable_socks5 = false", netproxy.Settings{Mode: netproxy.ModeFull}},
		{"enabled = true\nenable_socks5_udp = false\nallow_upstream_proxy = false", netproxy.Settings{Mode: netproxy.ModeFull, EnableSOCKS5: true}},
		{"enabled = true\ndangerously_allow_all_unix_sockets = true", netproxy.Settings{Mode: netproxy.ModeFull, EnableSOCKS5: true, DangerouslyAllowAllUnixSockets: true}},
		{"enabled = true\nunix_sockets = { \"/run/a.sock\" = \"allow\", \"/run/b.sock\" = \"deny\" }", netproxy.Settings{Mode: netproxy.ModeFull, EnableSOCKS5: true,
			UnixSockets: map[string]netproxy.Action{"/run/a.sock": netproxy.Allow, "/run/b.sock": netproxy.Deny}}},
		{"enabled = true\nproxy_url = \"http://127.0.0.1:3128\"\nsocks_url = \"socks5://127.0.0.1:8081\"\ndangerously_allow_non_loopback_proxy = true\nmitm = {}\nzzz_future = 1",
			netproxy.Settings{Mode: netproxy.ModeFull, EnableSOCKS5: true}},
	} {
		p, _ := loadAt(t, netProfile(true, tc.body))
		r, err := p.Resolve("a", "/w")
		if err != nil {
			t.Errorf("%q: %v", tc.body, err)
			continue
		}
		if r.Profile.Network != sandbox.NetworkEnabled || r.Profile.Proxy == nil || !reflect.DeepEqual(*r.Profile.Proxy, tc.want) {
			t.Errorf("%q: network %v proxy %+v, want enabled and %+v", tc.body, r.Profile.Network, r.Profile.Proxy, tc.want)
		}
		if f, err := p.ResolveFilesystem("a", "/w"); err != nil || f.Profile.Proxy != nil {
			t.Errorf("%q: ResolveFilesystem %+v %v", tc.body, f.Profile.Proxy, err)
		}
	}
	// A network that is off, or not set, has no proxy; a key under it is
	// warned about.
	for _, body := range []string{"enabled = false\ndomains = { \"a.com\" = \"allow\" }", "domains = { \"a.com\" = \"allow\" }"} {
		p, _ := loadAt(t, netProfile(true, body))
		r, err := p.Resolve("a", "/w")
		if err != nil || r.Profile.Proxy != nil || r.Profile.FullNetwork() {
			t.Errorf("%q: %+v %v", body, r.Profile, err)
		}
		if !slices.ContainsFunc(p.Warnings, func(w string) bool {
			return strings.Contains(w, "permissions.a.network.domains: ignored: the network of profile `a` is off")
		}) {
			t.Errorf("%q: warnings %q", body, p.Warnings)
		}
	}
}

// TestNetworkDenyAll: "*" = "deny" is refused whatever the gate and the
// network say, with the Codex CLI's text (recorded from its app-server
// 0.169.0; no file name); "*" = "allow" is a pattern like any other.
func TestNetworkDenyAll(t *testing.T) {
	want := "network proxy constraints are invalid: invalid value for network.denied_domains: * (allowed exact hosts or scoped wildcards like *.example.com or **.example.com)"
	for _, gate := range []bool{true, false} {
		for _, body := range []string{"enabled = true\ndomains = { \"*\" = \"deny\" }", "enabled = false\ndomains = { \"a.com\" = \"allow\", \"*\" = \"deny\" }"} {
			p, _ := loadAt(t, netProfile(gate, body))
			if _, err := p.Resolve("a", "/w"); err == nil || err.Error() != want {
				t.Errorf("gate %v %q: %v", gate, body, err)
			}
			if r, err := p.Resolve(Workspace, "/w"); err != nil || r.Profile.Proxy != nil {
				t.Errorf(":workspace: %v", err)
			}
		}
	}
	p, _ := loadAt(t, netProfile(true, "enabled = true\ndomains = { \"*\" = \"allow\" }"))
	if r, err := p.Resolve("a", "/w"); err != nil || r.Profile.Proxy.Domains["*"] != netproxy.Allow {
		t.Errorf("* = allow: %v", err)
	}
}

// TestNetworkWarnings: keys accepted without effect, and unknown keys, are
// warned about once, naming the key.
func TestNetworkWarnings(t *testing.T) {
	p, path := loadAt(t, netProfile(true, "enabled = true\nproxy_url = \"http://127.0.0.1:3128\"\nsocks_url = \"x\"\ndangerously_allow_non_loopback_proxy = true\nzzz_future = 1"))
	for _, want := range []string{
		path + ": permissions.a.network.proxy_url: accepted and without effect",
		path + ": permissions.a.network.socks_url: accepted and without effect",
		path + ": permissions.a.network.dangerously_allow_non_loopback_proxy: accepted and without effect",
		path + ": permissions.a.network.zzz_future: unknown key, ignored",
	} {
		if n := len(slices.DeleteFunc(slices.Clone(p.Warnings), func(w string) bool { return !strings.HasPrefix(w, want) })); n != 1 {
			t.Errorf("%d warnings %q…, want 1: %q", n, want, p.Warnings)
		}
	}
}

// TestNetworkNotServed: with the gate, keys that ask for what this
// executor's proxy does not do refuse the profile, naming the key, rather
// than run it otherwise than written.
func TestNetworkNotServed(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{"enabled = true\nenable_socks5_udp = true", "permissions.a.network.enable_socks5_udp: SOCKS5 UDP is not supported by this executor"},
		{"enabled = true\nallow_upstream_proxy = true", "permissions.a.network.allow_upstream_proxy: chaining to an upstream proxy is not supported by this executor"},
		{"enabled = true\nmitm = { hooks = [] }", "permissions.a.network.mitm.hooks: MITM hooks are not supported by this executor"},
	} {
		for _, asDefault := range []bool{false, true} {
			text := netProfile(true, tc.body)
			if asDefault {
				text = "default_permissions = \"a\"\n" + text
			}
			p, path := loadAt(t, text)
			if _, err := p.Resolve("a", "/w"); err == nil || !strings.HasPrefix(err.Error(), path+": "+tc.want) {
				t.Errorf("%q: %v, want %s…", tc.body, err, tc.want)
			}
			if !p.Unusable("a") {
				t.Errorf("%q: not marked unusable", tc.body)
			}
		}
	}
}

// TestNetworkGateOff: without the gate a profile whose enabled network a
// key narrows is refused, naming the key and how to turn the gate on
// (the Codex CLI silently gives such a command the whole network); keys
// that do not narrow leave the whole network, with a warning.
func TestNetworkGateOff(t *testing.T) {
	gateText := "narrows the network through a proxy, which needs the feature gate: set `[features] network_proxy = true` in config.toml (or pass --enable network_proxy) to run it, or remove the key, or set enabled = false"
	for _, tc := range []struct{ body, key string }{
		{"enabled = true\ndomains = { \"a.com\" = \"allow\" }", "domains"},
		{"enabled = true\ndomains = {}", "domains"},
		{"enabled = true\nunix_sockets = { \"/run/a.sock\" = \"deny\" }", "unix_sockets"},
		{"enabled = true\nmode = \"limited\"", "mode"},
		{"enabled = true\nmitm = { version = 1 }", "mitm"},
		{"enabled = true\nmode = \"limited\"\ndomains = { \"a.com\" = \"allow\" }", "domains"},
	} {
		p, path := loadAt(t, netProfile(false, tc.body))
		want := path + ": permissions.a.network." + tc.key + ": " + gateText
		if _, err := p.Resolve("a", "/w"); err == nil || err.Error() != want {
			t.Errorf("%q:\n got %v\nwant %s", tc.body, err, want)
		}
		// The gate from the command line turns it into a proxy.
		for _, o := range []string{"features.network_proxy=true", "features={network_proxy=true}"} {
			p, _ = loadAt(t, netProfile(false, tc.body), o)
			if r, err := p.Resolve("a", "/w"); tc.key != "mitm" && (err != nil || r.Profile.Proxy == nil) {
				t.Errorf("%q with -c %s: %+v %v", tc.body, o, r.Profile.Proxy, err)
			}
		}
		// And off again from the command line.
		p, _ = loadAt(t, netProfile(true, tc.body), "features.network_proxy=false")
		if _, err := p.Resolve("a", "/w"); err == nil || !strings.Contains(err.Error(), gateText) {
			t.Errorf("%q with the gate turned off: %v", tc.body, err)
		}
	}
	for _, body := range []string{"enabled = true", "enabled = true\nmode = \"full\"", "enabled = true\nallow_local_binding = true\nenable_socks5 = false\nenable_socks5_udp = true\nallow_upstream_proxy = true\ndangerously_allow_all_unix_sockets = true\nproxy_url = \"x\""} {
		p, _ := loadAt(t, netProfile(false, body))
		r, err := p.Resolve("a", "/w")
		if err != nil || r.Profile.Proxy != nil || !r.Profile.FullNetwork() {
			t.Errorf("%q: %+v %v, want the whole network", body, r.Profile, err)
		}
		if strings.Contains(body, "allow_local_binding") && !slices.ContainsFunc(p.Warnings, func(w string) bool {
			return strings.Contains(w, "permissions.a.network.allow_local_binding: ignored: without `[features] network_proxy = true`")
		}) {
			t.Errorf("%q: warnings %q", body, p.Warnings)
		}
	}
	// A gate that is not a boolean stays off, with a warning.
	p, _ := loadAt(t, "[features]\nnetwork_proxy = \"yes\"\n"+netProfile(false, "enabled = true\ndomains = {}"))
	if _, err := p.Resolve("a", "/w"); err == nil || !strings.Contains(err.Error(), gateText) || p.ProxyGate() {
		t.Errorf("gate \"yes\": %v", err)
	}
}

// TestNetworkMerge: extends merges the network keys, the child winning;
// the domains and unix_sockets tables merge pattern by pattern, the
// child's verdict winning (as the Codex CLI 0.169.0 does: probed, a child
// allowing a host its parent denies reaches it, and the parent's other
// entries stay).
func TestNetworkMerge(t *testing.T) {
	text := `[features]
network_proxy = true
[permissions.parent]
extends = ":workspace"
[permissions.parent.network]
enabled = true
allow_local_binding = true
mode = "limited"
domains = { "127.0.0.1" = "allow", "localhost" = "deny", "p.example.com" = "allow" }
unix_sockets = { "/run/p.sock" = "allow" }
[permissions.child]
extends = "parent"
[permissions.child.network]
mode = "full"
enable_socks5 = false
domains = { "localhost" = "allow", "c.example.com" = "deny" }
[permissions.off]
extends = "child"
[permissions.off.network]
enabled = false
[permissions.bad]
extends = "child"
[permissions.bad.network]
enable_socks5_udp = true
[permissions.wrong]
extends = "parent"
[permissions.wrong.network]
mode = "nope"
[permissions.under]
extends = "wrong"
[permissions.under.network]
mode = "full"
`
	p, _ := loadAt(t, text)
	r, err := p.Resolve("child", "/w")
	want := netproxy.Settings{
		Domains: map[string]netproxy.Action{"127.0.0.1": netproxy.Allow, "localhost": netproxy.Allow, "p.example.com": netproxy.Allow, "c.example.com": netproxy.Deny},
		Mode:    netproxy.ModeFull, AllowLocalBinding: true, UnixSockets: map[string]netproxy.Action{"/run/p.sock": netproxy.Allow},
	}
	if err != nil || r.Profile.Proxy == nil || !reflect.DeepEqual(*r.Profile.Proxy, want) {
		t.Errorf("child: %+v %v\nwant %+v", r.Profile.Proxy, err, want)
	}
	if r, err := p.Resolve("parent", "/w"); err != nil || r.Profile.Proxy == nil || r.Profile.Proxy.Mode != netproxy.ModeLimited || len(r.Profile.Proxy.Domains) != 3 || !r.Profile.Proxy.EnableSOCKS5 {
		t.Errorf("parent: %+v %v", r.Profile.Proxy, err)
	}
	if r, err := p.Resolve("off", "/w"); err != nil || r.Profile.Proxy != nil || r.Profile.FullNetwork() {
		t.Errorf("off: %+v %v", r.Profile, err)
	}
	if _, err := p.Resolve("bad", "/w"); err == nil || !strings.Contains(err.Error(), "permissions.bad.network.enable_socks5_udp: SOCKS5 UDP is not supported") {
		t.Errorf("bad: %v", err)
	}
	for _, name := range []string{"wrong", "under"} {
		if _, err := p.Resolve(name, "/w"); err == nil || !strings.Contains(err.Error(), "unknown variant `nope`") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestNetworkBuiltins: with the gate, :danger-full-access keeps the whole
// network and no proxy [ours: the Codex CLI gives it a proxy that allows
// nothing]; :workspace and :read-only have no network and no proxy.
func TestNetworkBuiltins(t *testing.T) {
	p, _ := loadAt(t, netProfile(true, "enabled = true"))
	if r, err := p.Resolve(DangerFullAccess, "/w"); err != nil || !r.Disabled || r.Profile.Proxy != nil {
		t.Errorf("%s: %+v %v", DangerFullAccess, r, err)
	}
	for _, name := range []string{Workspace, ReadOnly} {
		if r, err := p.Resolve(name, "/w"); err != nil || r.Profile.Proxy != nil || r.Profile.FullNetwork() {
			t.Errorf("%s: %+v %v", name, r.Profile, err)
		}
	}
	if !p.ProxyGate() {
		t.Error("gate not read")
	}
}
