package archtest

import (
	"fmt"
	"slices"
	"strings"
)

// module is the import path of our module.
const module = "github.com/codexec/codex"

// External dependencies the client must never pull in: they are the
// server's (PTYs, Landlock, libcap's cgo psx).
const (
	creackPTY = "github.com/creack/pty"
	landlock  = "github.com/landlock-lsm/go-landlock"
	psx       = "kernel.org/pub/linux/libs/security/libcap/psx"
)

// rule constrains the transitive dependencies of one package of ours.
// Each of Forbid names a package or, with a trailing "/...", a package
// tree. Only, when not nil, is the complete list of our module's packages
// (same syntax) the package may depend on; nil allows any not forbidden.
type rule struct {
	Pkg    string   // import path relative to module, e.g. "unifiedexec"
	Forbid []string // full import paths or trees
	Only   []string // relative to module; nil = no allowlist
}

// rules is the import direction we keep: protocol at the bottom, the
// client beside the server, never on top of it.
var rules = []rule{
	// rpc is JSON-RPC only (docs/development.md §2): nothing of ours; wire
	// is the protocol on top of it; the listener and its token checks
	// (wsserve) are server code on top of both.
	{Pkg: "rpc", Only: []string{}},
	{Pkg: "wire", Only: []string{"rpc"}},
	{Pkg: "wsserve", Only: []string{"rpc", "wire", "internal/zapslog"}},
	// The HTTP client of http/request is mechanics only, like rpc.
	{Pkg: "httpreq", Only: []string{}},
	// The managed network proxy is mechanics too: the server binds it to
	// its review and notifications; it imports nothing of ours.
	{Pkg: "netproxy", Only: []string{}},
	{Pkg: "sandbox", Forbid: ours("proc", "execserver", "fshelper", "unifiedexec", "cmd/codex-bench", "wsserve")},
	{Pkg: "fshelper", Forbid: ours("proc", "execserver", "unifiedexec", "cmd/codex-bench")},
	// proc spawns what it is given (a Launcher it declares; execserver
	// passes the sandbox helper's): it knows no sandbox.
	{Pkg: "proc", Forbid: ours("sandbox", "execserver", "fshelper", "unifiedexec", "cmd/codex-bench")},
	{Pkg: "execserver", Forbid: ours("unifiedexec", "cmd/codex-bench")},
	// config reads config.toml into sandbox profiles; only the server's
	// start-up and request handling use it. It reaches wire only through
	// sandbox, whose policies carry wire paths (wire.Path).
	{Pkg: "config", Forbid: ours("proc", "execserver", "fshelper", "unifiedexec", "cmd/codex-bench", "shelltool")},
	{Pkg: "unifiedexec", Forbid: append(ours("proc", "execserver", "sandbox", "fshelper", "cmd/codex-bench", "wsserve"),
		creackPTY+"/...", landlock+"/...", psx+"/...")},
	// The agent tool layer sits on top of the client, through its Backend
	// seam (docs/client.md §4); the client never needs it.
	{Pkg: "unifiedexec", Forbid: ours("unifiedexec/agenttool")},
	{Pkg: "unifiedexec/agenttool", Only: []string{"unifiedexec", "rpc", "wire"}},
	// The MCP shell tool (docs/development.md §2): the policy engine is pure, the exec
	// control knows no policy, and neither side of the exec-server
	// depends on the shell tool.
	{Pkg: "execpolicy", Only: []string{}},
	{Pkg: "shelltool/escalate", Forbid: ours("shelltool", "execpolicy", "execserver", "unifiedexec", "fshelper", "cmd/codex-bench")},
	{Pkg: "shelltool", Forbid: ours("execserver", "unifiedexec", "fshelper", "cmd/codex-bench")},
	{Pkg: "execserver", Forbid: ours("shelltool", "shelltool/escalate", "execpolicy")},
	// Metrics (issue 12): the server reports to them, never the other
	// way, and the client never pulls in the Prometheus library.
	{Pkg: "metrics", Only: []string{}},
	{Pkg: "unifiedexec", Forbid: append(ours("metrics"), "github.com/prometheus/...")},
	// The client logs with log/slog, as rpc does: zap is the server's
	// (docs/development.md §2).
	{Pkg: "unifiedexec", Forbid: append(ours("internal/zapslog"), "go.uber.org/zap/...")},
	{Pkg: "rpc", Forbid: []string{"go.uber.org/zap/..."}},
}

// ours returns the full import paths of our packages rel.
func ours(rel ...string) []string {
	out := make([]string, len(rel))
	for i, r := range rel {
		out[i] = module + "/" + r
	}
	return out
}

// matches reports whether path is pattern, or under it when pattern ends
// in "/...".
func matches(pattern, path string) bool {
	if tree, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == tree || strings.HasPrefix(path, tree+"/")
	}
	return path == pattern
}

// violations checks rules against deps (full import path → its
// transitive dependencies, as `go list -deps` reports them) and returns
// one line per broken rule. A rule whose package is missing is broken
// too: a renamed package must not silently drop its rule.
func violations(deps map[string][]string, rules []rule) []string {
	var out []string
	for _, r := range rules {
		pkg := module + "/" + r.Pkg
		ds, ok := deps[pkg]
		if !ok {
			out = append(out, fmt.Sprintf("%s: no such package (update the rule)", r.Pkg))
			continue
		}
		for _, d := range ds {
			if slices.ContainsFunc(r.Forbid, func(p string) bool { return matches(p, d) }) {
				out = append(out, fmt.Sprintf("%s must not depend on %s", r.Pkg, d))
			}
			if r.Only == nil || !matches(module+"/...", d) || d == pkg {
				continue
			}
			if !slices.ContainsFunc(r.Only, func(p string) bool { return matches(module+"/"+p, d) }) {
				out = append(out, fmt.Sprintf("%s may depend only on %q of ours, not on %s", r.Pkg, r.Only, d))
			}
		}
	}
	return out
}
