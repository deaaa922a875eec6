package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The MCP shell tool's network under config.toml's network_proxy feature
// (docs/shell-tool.md §3.6): the Codex CLI 0.169.0 with the feature and a
// default profile that allows only some domains sends the MCP server a
// per-call state with "network":"enabled" and nothing else (recorded by
// running the CLI against this server); the domains stay in config.toml,
// which the server reads itself.

// startMCPBed starts `codex exec-mcp-server` (plus args) inside a fresh
// network test bed (netbed_test.go), with env added to its environment.
func startMCPBed(t *testing.T, env []string, args ...string) *mcpServer {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the network test bed needs root to make its namespaces")
	}
	dir := t.TempDir()
	cfg := bedConfig{Hosts: filepath.Join(dir, "hosts"), Argv: append([]string{binary, "exec-mcp-server"}, args...)}
	if err := os.WriteFile(cfg.Hosts, []byte(bedHosts), 0o644); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(cfg)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(append([]string{raceEnv, "PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}, env...), bedEnv+"="+string(data))
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET | syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	return startMCPCmd(t, cmd)
}

// mcpNetProbes are the probes of a call whose state enables the network:
// an allowed host, an unlisted one, and a direct connection that ignores
// the proxy variables.
var mcpNetProbes = [][2]string{
	{"api", `curl -sS --max-time 5 http://api.example.com/`},
	{"other", `curl -s --max-time 5 -o /dev/null -w '%{http_code}' http://other.org/`},
	{"direct", `exec 3<>/dev/tcp/` + bedPublic + `/80 && echo connected`},
}

// mcpProbe runs the probes in one call under profile and returns what
// each printed, trimmed, by name.
func mcpProbe(t *testing.T, s *mcpServer, id int, profile string, probes [][2]string) map[string]string {
	t.Helper()
	var script strings.Builder
	for _, p := range probes {
		fmt.Fprintf(&script, "printf '\\n@@%s@@ '; ( %s ) 2>&1\n", p[0], p[1])
	}
	dir := t.TempDir()
	r := s.call(t, id, script.String(), dir, profile, dir, 30000)
	got := map[string]string{}
	for _, part := range strings.Split(r.Output, "\n@@")[1:] {
		name, rest, _ := strings.Cut(part, "@@ ")
		got[name] = strings.TrimSpace(rest)
	}
	t.Logf("call %d: %q", id, r.Output)
	return got
}

// netProfile is the per-call permission profile Codex 0.169.0 sends for a
// config profile with `:root` readable and the network enabled.
const netProfile = `{"type":"managed","file_system":{"type":"restricted","entries":[{"path":{"type":"special","value":{"kind":"root"}},"access":"read"}]},"network":"enabled"}`

const netConfigProfiles = `[permissions.net.filesystem]
":root" = "read"
[permissions.net.network]
enabled = true
domains = { "api.example.com" = "allow" }
[permissions.offline.filesystem]
":root" = "read"
[permissions.udp.filesystem]
":root" = "read"
[permissions.udp.network]
enabled = true
enable_socks5_udp = true
domains = { "api.example.com" = "allow" }
`

// TestMCPNetworkProxiedDefault is the attack: with the feature and a
// default profile that allows only api.example.com, a call whose state
// says "network":"enabled" reached every host and any address directly
// (other.org answered 200 and the direct connect succeeded). It now runs
// behind a proxy with the default profile's domains, and the proxy is its
// only way out.
// Both interceptors' runners serve the proxy.
func TestMCPNetworkProxiedDefault(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"ptrace", "wrapper"} {
		t.Run(mode, func(t *testing.T) {
			args := []string{"--log-level", "info"}
			if mode == "wrapper" {
				args = append(args, "--intercept", "wrapper", "--bash", patchedBashPath(t))
			}
			testMCPNetworkProxiedDefault(t, args)
		})
	}
}

func testMCPNetworkProxiedDefault(t *testing.T, args []string) {
	home := writeHome(t, "default_permissions = \"net\"\n[features]\nnetwork_proxy = true\n"+netConfigProfiles)
	s := startMCPBed(t, []string{"CODEX_HOME=" + home}, args...)
	got := mcpProbe(t, s, 1, netProfile, mcpNetProbes)
	if got["api"] != "hello api.example.com GET /" {
		t.Errorf("allowed host: %q", got["api"])
	}
	if got["other"] != "403" {
		t.Errorf("unlisted host: %q, want 403 from the proxy", got["other"])
	}
	if !strings.Contains(got["direct"], "Network is unreachable") {
		t.Errorf("direct connect: %q, want Network is unreachable", got["direct"])
	}
	// A full-access state keeps the whole network, as the exec-server's
	// :danger-full-access does.
	got = mcpProbe(t, s, 2, disabledProfile, mcpNetProbes)
	if got["api"] != "hello api.example.com GET /" || got["other"] != "200" || got["direct"] != "connected" {
		t.Errorf("full access: %q", got)
	}
	if logs := s.stderr.String(); !strings.Contains(logs, "network through a proxy") {
		t.Errorf("no decision logged:\n%s", logs)
	}
}

// TestMCPNetworkNotProxiedDefault: with the feature on and a default
// profile that is not proxied (its network is off), a call whose state
// enables the network gets a proxy that allows nothing: the CLI routes
// every enabled network through a proxy, whose domains the server cannot
// know. So does one whose default profile cannot be used (udp: a setting
// this executor refuses).
func TestMCPNetworkNotProxiedDefault(t *testing.T) {
	t.Parallel()
	for _, def := range []string{"offline", ":read-only", "udp"} {
		t.Run(def, func(t *testing.T) {
			home := writeHome(t, "default_permissions = \""+def+"\"\n[features]\nnetwork_proxy = true\n"+netConfigProfiles)
			s := startMCPBed(t, []string{"CODEX_HOME=" + home})
			got := mcpProbe(t, s, 1, netProfile, mcpNetProbes)
			if !strings.Contains(got["api"], `"status":"blocked"`) {
				t.Errorf("api.example.com: %q, want refused by the proxy", got["api"])
			}
			if got["other"] != "403" {
				t.Errorf("unlisted host: %q, want 403", got["other"])
			}
			if !strings.Contains(got["direct"], "Network is unreachable") {
				t.Errorf("direct connect: %q, want Network is unreachable", got["direct"])
			}
		})
	}
}

// TestMCPNetworkFeatureOff: without the feature the call's enabled
// network is the whole network, as before (and as the reference's MCP
// server gives it).
func TestMCPNetworkFeatureOff(t *testing.T) {
	t.Parallel()
	home := writeHome(t, "default_permissions = \"offline\"\n"+netConfigProfiles)
	s := startMCPBed(t, []string{"CODEX_HOME=" + home})
	got := mcpProbe(t, s, 1, netProfile, mcpNetProbes)
	if got["api"] != "hello api.example.com GET /" || got["other"] != "200" || got["direct"] != "connected" {
		t.Errorf("feature off: %q", got)
	}
}

// TestMCPNetworkFeatureFromCommandLine: --enable network_proxy turns the
// feature on over a file without it, as for the exec-server.
func TestMCPNetworkFeatureFromCommandLine(t *testing.T) {
	t.Parallel()
	home := writeHome(t, "default_permissions = \"net\"\n"+netConfigProfiles)
	s := startMCPBed(t, []string{"CODEX_HOME=" + home}, "--enable", "network_proxy")
	got := mcpProbe(t, s, 1, netProfile, mcpNetProbes)
	if got["api"] != "hello api.example.com GET /" || got["other"] != "403" || !strings.Contains(got["direct"], "Network is unreachable") {
		t.Errorf("--enable network_proxy: %q", got)
	}
}

// TestMCPNetworkConfigRefused: a config.toml the Codex CLI refuses stops
// the server at start-up, as it stops the exec-server: it cannot tell
// whether the feature is on.
func TestMCPNetworkConfigRefused(t *testing.T) {
	t.Parallel()
	home := writeHome(t, "default_permissions = \"missing\"\n[features]\nnetwork_proxy = true\n"+netConfigProfiles)
	_, stderr, code := runCLI(t, []string{"CODEX_HOME=" + home}, "exec-mcp-server")
	if code != 1 || !strings.Contains(stderr, "exec-mcp-server: "+home+"/config.toml: default_permissions: default_permissions refers to undefined profile `missing`") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}
