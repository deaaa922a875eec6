package sandbox

import (
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/codexec/codex/netproxy"
)

// Proxy routes: what a listener the helper opens for a proxied command
// (Plan.Proxy) serves. The server's proxy serves HTTP (absolute-form and
// CONNECT) on the "http" listener and SOCKS5 on the "socks5" one.
const (
	RouteHTTP   = netproxy.RouteHTTP
	RouteSOCKS5 = netproxy.RouteSOCKS5
)

// ProxyListener is one listener of a proxied command
// (Launcher.ProxyListeners): a TCP listener on 127.0.0.1 inside the
// command's network namespace, which the server's proxy serves for Route.
type ProxyListener struct {
	Route    string
	Listener net.Listener
}

// ErrNotProxied is ProxyListeners' answer for a command that has no proxy
// (its plan is not proxied, or the helper was never started).
var ErrNotProxied = errors.New("sandbox: the command has no proxied network")

// ProxyPlan is the proxied network of a plan (Plan.Proxy; docs/sandbox.md
// §4.9): the routes the helper opens a listener for, in the order it sends
// them, and what the command's proxy variables say.
type ProxyPlan struct {
	// Routes are RouteHTTP, then RouteSOCKS5 when the settings enable
	// SOCKS5.
	Routes []string `json:"routes"`
	// AllowLocalBinding sets CODEX_NETWORK_ALLOW_LOCAL_BINDING=1 and the
	// private-range NO_PROXY list.
	AllowLocalBinding bool `json:"allowLocalBinding,omitempty"`
}

// proxyPlanFor is the plan of settings s.
func proxyPlanFor(s *netproxy.Settings) *ProxyPlan {
	p := &ProxyPlan{Routes: []string{RouteHTTP}, AllowLocalBinding: s.AllowLocalBinding}
	if s.EnableSOCKS5 {
		p.Routes = append(p.Routes, RouteSOCKS5)
	}
	return p
}

// checkUnixSockets refuses settings that allow a Unix socket by path
// without allowing them all: the reference accepts such an entry and
// enforces nothing on Linux (the socket stays refused); we refuse it,
// rather than let a profile read as granting what it does not (fail
// closed; docs/sandbox.md §4.9). "deny" entries name the default.
func checkUnixSockets(s *netproxy.Settings) error {
	if s.DangerouslyAllowAllUnixSockets {
		return nil
	}
	var allowed []string
	for path, act := range s.UnixSockets {
		if act == netproxy.Allow {
			allowed = append(allowed, path)
		}
	}
	if len(allowed) == 0 {
		return nil
	}
	slices.Sort(allowed)
	return invalidf("network proxy: allowing the Unix socket %s by path cannot be enforced on this executor; remove the entry, or allow every Unix socket (dangerously_allow_all_unix_sockets)", strconv.Quote(allowed[0]))
}

// Proxy variables a proxied command gets (docs/sandbox.md §4.9), whatever
// its caller set for them.
var (
	// proxyHTTPVars point at the HTTP listener.
	proxyHTTPVars = []string{
		"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy",
		"WS_PROXY", "WSS_PROXY", "ws_proxy", "wss_proxy",
		"YARN_HTTP_PROXY", "YARN_HTTPS_PROXY",
		"NPM_CONFIG_PROXY", "NPM_CONFIG_HTTP_PROXY", "NPM_CONFIG_HTTPS_PROXY",
		"npm_config_proxy", "npm_config_http_proxy", "npm_config_https_proxy",
		"BUNDLE_HTTP_PROXY", "BUNDLE_HTTPS_PROXY", "PIP_PROXY",
		"DOCKER_HTTP_PROXY", "DOCKER_HTTPS_PROXY",
	}
	// proxyAllVars point at the SOCKS5 listener (socks5h: names resolve
	// at the proxy), or at the HTTP one without SOCKS5.
	proxyAllVars = []string{"ALL_PROXY", "all_proxy", "FTP_PROXY", "ftp_proxy"}
	// proxyNoProxyVars are empty, or proxyLocalNoProxy with local binding.
	proxyNoProxyVars = []string{"NO_PROXY", "no_proxy", "NPM_CONFIG_NOPROXY", "npm_config_noproxy", "BUNDLE_NO_PROXY"}
)

// proxyLocalNoProxy is NO_PROXY with local binding allowed.
const proxyLocalNoProxy = "localhost,127.0.0.1,::1,10.0.0.0/8,172.16.0.0/12,192.168.0.0/16"

// proxyEnv returns the proxy variables of a proxied command whose listener
// for route r is on 127.0.0.1:ports[r].
func proxyEnv(p *ProxyPlan, ports map[string]int) []string {
	httpURL := "http://127.0.0.1:" + strconv.Itoa(ports[RouteHTTP])
	allURL := httpURL
	if port, ok := ports[RouteSOCKS5]; ok {
		allURL = "socks5h://127.0.0.1:" + strconv.Itoa(port)
	}
	noProxy, local := "", "0"
	if p.AllowLocalBinding {
		noProxy, local = proxyLocalNoProxy, "1"
	}
	env := make([]string, 0, len(proxyHTTPVars)+len(proxyAllVars)+len(proxyNoProxyVars)+4)
	for _, k := range proxyHTTPVars {
		env = append(env, k+"="+httpURL)
	}
	for _, k := range proxyAllVars {
		env = append(env, k+"="+allURL)
	}
	for _, k := range proxyNoProxyVars {
		env = append(env, k+"="+noProxy)
	}
	return append(env,
		"CODEX_NETWORK_PROXY_ACTIVE=1",
		"CODEX_NETWORK_ALLOW_LOCAL_BINDING="+local,
		"NODE_USE_ENV_PROXY=1",
		"ELECTRON_GET_USE_PROXY=true")
}

// withEnv returns env without the variables that extra sets, then extra:
// the caller's value of a name extra sets never survives.
func withEnv(env, extra []string) []string {
	set := make(map[string]bool, len(extra))
	for _, kv := range extra {
		k, _, _ := strings.Cut(kv, "=")
		set[k] = true
	}
	out := make([]string, 0, len(env)+len(extra))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !set[k] {
			out = append(out, kv)
		}
	}
	return append(out, extra...)
}
