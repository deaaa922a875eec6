package config

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/codexec/codex/netproxy"
	"github.com/codexec/codex/wire"
)

// networkTOML is one profile's [permissions.<name>.network] table as
// written: each key's value, nil or absent when the table does not set it
// (an extends chain merges them key by key, child first).
type networkTOML struct {
	enabled *bool
	// domains and unixSockets merge across extends, the child's verdict
	// winning for a pattern both list (as the Codex CLI 0.169.0 does:
	// probed with a parent denying and a child allowing one host).
	domains     map[string]netproxy.Action
	unixSockets map[string]netproxy.Action
	mode        *netproxy.Mode
	flags       map[string]bool // the boolean keys below that the table sets
	// mitm is the first key set in the mitm table ("" for none).
	mitm string
	// bad is the first wrong type or value: the Codex CLI loads the file
	// and refuses the requests that use the profile, and so do we.
	bad *Error
	// keys maps a key the table sets to its dotted path, for messages.
	keys map[string]string
}

// The boolean keys of the network table.
const (
	keyAllowLocalBinding     = "allow_local_binding"
	keyEnableSOCKS5          = "enable_socks5"
	keyEnableSOCKS5UDP       = "enable_socks5_udp"
	keyAllowAllUnixSockets   = "dangerously_allow_all_unix_sockets"
	keyAllowUpstreamProxy    = "allow_upstream_proxy"
	keyAllowNonLoopbackProxy = "dangerously_allow_non_loopback_proxy"
)

var networkFlags = []string{keyAllowLocalBinding, keyEnableSOCKS5, keyEnableSOCKS5UDP, keyAllowAllUnixSockets, keyAllowUpstreamProxy, keyAllowNonLoopbackProxy}

// mitmKeys are the members of the Codex CLI's mitm table.
var mitmKeys = []string{"version", "hooks", "actions"}

// readNetwork reads the network table. Every key of the Codex CLI's is
// typed as it types it; a wrong type or value does not stop the load (the
// CLI's app-server loads such a file too) but makes the profile unusable:
// its requests are refused with the CLI's text, at the position the CLI
// gives (the `permissions` table). Unknown keys are warnings.
func (p *Permissions) readNetwork(prof *profileTOML, key string, v any) error {
	n := &prof.net
	n.keys = map[string]string{}
	bad := func(format string, args ...any) {
		if n.bad == nil {
			n.bad = p.permissionsErr(fmt.Sprintf(format, args...))
		}
	}
	t, ok := v.(map[string]any)
	if !ok {
		bad("invalid type: %s, expected struct NetworkToml", serdeUnexpected(v))
		return nil
	}
	for _, k := range sortedKeys(t) {
		val, sub := t[k], key+"."+quoteKey(k)
		n.keys[k] = sub
		switch k {
		case "enabled":
			if b, ok := val.(bool); ok {
				prof.network = &b
			} else {
				bad("invalid type: %s, expected a boolean", serdeUnexpected(val))
			}
		case "domains":
			n.domains = p.readVerdicts(val, "struct NetworkDomainPermissionsToml", bad)
		case "unix_sockets":
			n.unixSockets = p.readVerdicts(val, "struct NetworkUnixSocketPermissionsToml", bad)
		case "mode":
			switch s, _ := enumVariant(val, []string{"limited", "full"}, bad); s {
			case "limited":
				m := netproxy.ModeLimited
				n.mode = &m
			case "full":
				m := netproxy.ModeFull
				n.mode = &m
			}
		case "proxy_url", "socks_url":
			if _, ok := val.(string); !ok {
				bad("invalid type: %s, expected a string", serdeUnexpected(val))
			}
		case "mitm":
			m, ok := val.(map[string]any)
			if !ok {
				bad("invalid type: %s, expected struct NetworkMitmTomlUnchecked", serdeUnexpected(val))
				continue
			}
			for _, mk := range sortedKeys(m) {
				if !contains(mitmKeys, mk) {
					bad("unknown field `%s`, expected one of `version`, `hooks`, `actions`", mk)
				} else if n.mitm == "" {
					n.mitm = sub + "." + mk
				}
			}
		default:
			if !contains(networkFlags, k) {
				p.warnf(sub, "unknown key, ignored")
				delete(n.keys, k)
				continue
			}
			b, ok := val.(bool)
			if !ok {
				bad("invalid type: %s, expected a boolean", serdeUnexpected(val))
				continue
			}
			if n.flags == nil {
				n.flags = map[string]bool{}
			}
			n.flags[k] = b
		}
	}
	return nil
}

// readVerdicts reads a table of pattern = "allow" | "deny" (domains,
// unix_sockets); what is not a table is an error naming structName.
func (p *Permissions) readVerdicts(v any, structName string, bad func(string, ...any)) map[string]netproxy.Action {
	t, ok := v.(map[string]any)
	if !ok {
		bad("invalid type: %s, expected %s", serdeUnexpected(v), structName)
		return nil
	}
	out := make(map[string]netproxy.Action, len(t))
	for _, k := range sortedKeys(t) {
		s, ok := enumVariant(t[k], []string{"allow", "deny"}, bad)
		if !ok {
			return nil
		}
		out[k] = netproxy.Action(s)
	}
	return out
}

// enumVariant reads a unit variant of names as serde takes it from TOML:
// its name, or a table of one key, the name.
func enumVariant(v any, names []string, bad func(string, ...any)) (string, bool) {
	name := ""
	switch x := v.(type) {
	case string:
		name = x
	case map[string]any:
		if len(x) != 1 {
			bad("invalid value: map, expected map with a single key")
			return "", false
		}
		for k, inner := range x {
			name = k
			if contains(names, k) {
				bad("invalid type: %s, expected unit", serdeUnexpected(inner))
				return "", false
			}
		}
	default:
		bad("invalid type: %s, expected string or map", serdeUnexpected(v))
		return "", false
	}
	if !contains(names, name) {
		q := make([]string, len(names))
		for i, n := range names {
			q[i] = "`" + n + "`"
		}
		bad("unknown variant `%s`, expected %s", name, strings.Join(q, " or "))
		return "", false
	}
	return name, true
}

// serdeUnexpected describes a decoded TOML value as serde's "invalid
// type" does (a date or time is a map to it).
func serdeUnexpected(v any) string {
	switch x := v.(type) {
	case string:
		return "string " + wire.RustDebug(x)
	case bool:
		return fmt.Sprintf("boolean `%t`", x)
	case int64:
		return fmt.Sprintf("integer `%d`", x)
	case float64:
		return "floating point `" + rustFloat(x) + "`"
	case []any, []map[string]any:
		return "sequence"
	}
	return "map"
}

// rustFloat writes f as Rust's Display does: no exponent, and ".0" on a
// whole number.
func rustFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// permissionsErr is an error about a value inside the permissions table,
// placed where the Codex CLI places it: at the line and column where the
// file first defines that table (FILE:LINE:COL: msg), or, when only a -c
// override does, at the key. It makes the profile unusable rather than
// stopping the load.
func (p *Permissions) permissionsErr(msg string) *Error {
	e := &Error{File: p.file, Line: p.permLine, Col: p.permCol, Msg: msg, Unsupported: true}
	if e.Line == 0 {
		e.Key = "permissions"
	}
	return e
}

// permissionsPos is the line and column where text first defines the
// `permissions` table, as the Codex CLI reports them: the `[` of an
// explicit `[permissions]` header, the `{` of an inline value, or else the
// key itself (a `[permissions.x]` header or a dotted key); 0, 0 when text
// does not define it.
func permissionsPos(text string) (int, int) {
	for i, line := range strings.Split(text, "\n") {
		rest := strings.TrimLeft(line, " \t")
		indent := len(line) - len(rest)
		if strings.HasPrefix(rest, "[") && !strings.HasPrefix(rest, "[[") {
			inner := strings.TrimLeft(rest[1:], " \t")
			at := indent + 1 + len(rest[1:]) - len(inner)
			if word, ok := permissionsWord(inner); ok {
				if strings.HasPrefix(strings.TrimLeft(inner[word:], " \t"), "]") {
					return i + 1, indent + 1
				}
				return i + 1, at + 1
			}
			continue
		}
		word, ok := permissionsWord(rest)
		if !ok {
			continue
		}
		after := strings.TrimLeft(rest[word:], " \t")
		if strings.HasPrefix(after, "=") {
			value := strings.TrimLeft(after[1:], " \t")
			return i + 1, len(line) - len(value) + 1
		}
		return i + 1, indent + 1
	}
	return 0, 0
}

// permissionsWord reports whether s starts with the key `permissions`
// (bare or quoted) followed by a key separator, and its length.
func permissionsWord(s string) (int, bool) {
	for _, form := range []string{"permissions", `"permissions"`, `'permissions'`} {
		if !strings.HasPrefix(s, form) {
			continue
		}
		next := strings.TrimLeft(s[len(form):], " \t")
		if next != "" && strings.ContainsRune(".=]", rune(next[0])) {
			return len(form), true
		}
	}
	return 0, false
}

// mergeNetwork overlays child's network keys on parent's.
func mergeNetwork(parent, child networkTOML) networkTOML {
	out := parent
	out.domains = mergeVerdicts(parent.domains, child.domains)
	out.unixSockets = mergeVerdicts(parent.unixSockets, child.unixSockets)
	if child.mode != nil {
		out.mode = child.mode
	}
	out.flags = maps.Clone(parent.flags)
	if out.flags == nil && child.flags != nil {
		out.flags = map[string]bool{}
	}
	maps.Copy(out.flags, child.flags)
	if child.mitm != "" {
		out.mitm = child.mitm
	}
	if child.bad != nil {
		out.bad = child.bad
	}
	out.keys = maps.Clone(parent.keys)
	if out.keys == nil && child.keys != nil {
		out.keys = map[string]string{}
	}
	maps.Copy(out.keys, child.keys)
	return out
}

func mergeVerdicts(parent, child map[string]netproxy.Action) map[string]netproxy.Action {
	if parent == nil && child == nil {
		return nil
	}
	out := maps.Clone(parent)
	if out == nil {
		out = map[string]netproxy.Action{}
	}
	maps.Copy(out, child)
	return out
}

// narrowingKeys are the network keys that narrow an enabled network, in
// the order their absence of a gate is reported.
var narrowingKeys = []string{"domains", "unix_sockets", "mode", "mitm"}

// networkOf is the proxy of a flattened profile whose network is enabled
// (nil when it runs with the full network), or the error that refuses the
// profile: a wrong type or value, a setting this executor does not serve
// (fail closed), or, without the feature gate, a setting that narrows the
// network, which only the proxy could honour.
func (p *Permissions) networkOf(prof *profileTOML) (*netproxy.Settings, error) {
	n := prof.net
	if n.bad != nil {
		return nil, n.bad
	}
	if n.domains["*"] == netproxy.Deny {
		// The Codex CLI refuses it whatever the gate and the network say.
		return nil, &Error{Plain: true, Unsupported: true, Msg: "network proxy constraints are invalid: invalid value for network.denied_domains: * " +
			"(allowed exact hosts or scoped wildcards like *.example.com or **.example.com)"}
	}
	if prof.network == nil || !*prof.network {
		return nil, nil
	}
	if !p.proxyGate {
		for _, k := range narrowingKeys {
			sub, ok := n.keys[k]
			if !ok || k == "mode" && (n.mode == nil || *n.mode != netproxy.ModeLimited) || k == "mitm" && n.mitm == "" {
				continue
			}
			return nil, p.unsupportedf(sub, "narrows the network through a proxy, which needs the feature gate: "+
				"set `[features] network_proxy = true` in config.toml (or pass --enable network_proxy) to run it, or remove the key, or set enabled = false")
		}
		return nil, nil
	}
	for _, k := range []string{keyEnableSOCKS5UDP, keyAllowUpstreamProxy} {
		if n.flags[k] {
			return nil, p.unsupportedf(n.keys[k], "%s", notServed[k])
		}
	}
	if n.mitm != "" {
		return nil, p.unsupportedf(n.mitm, "MITM hooks are not supported by this executor; remove the mitm table")
	}
	s := &netproxy.Settings{
		Domains:                        maps.Clone(n.domains),
		Mode:                           netproxy.ModeFull,
		AllowLocalBinding:              n.flags[keyAllowLocalBinding],
		EnableSOCKS5:                   true,
		DangerouslyAllowAllUnixSockets: n.flags[keyAllowAllUnixSockets],
		UnixSockets:                    maps.Clone(n.unixSockets),
	}
	if n.mode != nil {
		s.Mode = *n.mode
	}
	if b, ok := n.flags[keyEnableSOCKS5]; ok {
		s.EnableSOCKS5 = b
	}
	return s, nil
}

// notServed are the refusals of keys that ask for what this executor's
// proxy does not do.
var notServed = map[string]string{
	keyEnableSOCKS5UDP:    "SOCKS5 UDP is not supported by this executor (its proxy relays TCP only); remove the key or set it to false",
	keyAllowUpstreamProxy: "chaining to an upstream proxy is not supported by this executor (allowed traffic would leave directly, not through the upstream proxy); remove the key or set it to false",
}

// warnNetwork records what in a usable profile's network table has no
// effect here.
func (p *Permissions) warnNetwork(name string, prof *profileTOML) {
	own := p.profiles[name].net
	enabled := prof.network != nil && *prof.network
	for _, k := range []string{"proxy_url", "socks_url"} {
		if sub, ok := own.keys[k]; ok {
			p.warnf(sub, "accepted and without effect: each command's proxy listens on ports of its own")
		}
	}
	if sub, ok := own.keys[keyAllowNonLoopbackProxy]; ok && own.flags[keyAllowNonLoopbackProxy] {
		p.warnf(sub, "accepted and without effect: each command's proxy listens only on the loopback of the command's own network namespace")
	}
	switch {
	case !enabled:
		for _, k := range slices.Concat(narrowingKeys, networkFlags) {
			if sub, ok := own.keys[k]; ok && k != keyAllowNonLoopbackProxy {
				p.warnf(sub, "ignored: the network of profile `%s` is off", name)
				break
			}
		}
	case !p.proxyGate:
		for _, k := range networkFlags {
			if sub, ok := own.keys[k]; ok && k != keyAllowNonLoopbackProxy {
				p.warnf(sub, "ignored: without `[features] network_proxy = true` profile `%s` has the full network and no proxy", name)
			}
		}
	}
}
