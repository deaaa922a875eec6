package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/codexec/codex/rpc"
)

// The managed network proxy on the wire (docs/protocol.md §6.5.1 and
// §6.17): process/start's networkProxy and enforceManagedNetwork, and the
// domain review, a request the server sends to the client and a
// notification of every decision.
const (
	// MethodNetworkPolicyRequest asks the client whether a command may
	// reach a host its profile does not list (request, server → client).
	MethodNetworkPolicyRequest = "network/policyRequest"
	// MethodNetworkPolicyDecision reports one decision of a command's
	// proxy (notification, server → client).
	MethodNetworkPolicyDecision = "network/policyDecision"
)

// NetworkProxyParams is process/start's networkProxy: the proxy of the
// command, and the review of unlisted hosts when PolicyDecisionTimeoutMs
// is present. It decodes with the reference's texts (serde's, checked in
// document order; a missing member after the others); Validate holds the
// checks the reference makes once the params are decoded.
type NetworkProxyParams struct {
	Proxy ProxyConfig `json:"proxy" rpc:"required"`
	// PolicyDecisionTimeoutMs, when present, turns the domain review on:
	// how long the server waits for the client's answer.
	PolicyDecisionTimeoutMs *uint64 `json:"policyDecisionTimeoutMs"`
	ExecutionID             *string `json:"executionId"`
	// AuditMetadata is an object, accepted and ignored.
	AuditMetadata json.RawMessage `json:"auditMetadata,omitempty"`
}

// ProxyConfig is networkProxy.proxy: the members of netproxy.Settings as
// the client spells them. The seven flags and the mode are required, in
// this order of "missing field" errors.
type ProxyConfig struct {
	Enabled                        bool      `json:"enabled" rpc:"required"`
	EnableSocks5                   bool      `json:"enableSocks5" rpc:"required"`
	EnableSocks5UDP                bool      `json:"enableSocks5Udp" rpc:"required"`
	AllowUpstreamProxy             bool      `json:"allowUpstreamProxy" rpc:"required"`
	DangerouslyAllowAllUnixSockets bool      `json:"dangerouslyAllowAllUnixSockets" rpc:"required"`
	Mode                           ProxyMode `json:"mode" rpc:"required" jsonschema:"enum=limited,enum=full" schema:"variantmap"`
	AllowLocalBinding              bool      `json:"allowLocalBinding" rpc:"required"`
	// Domains maps a host pattern to "allow", "deny" or "none" (listed
	// without a verdict: as if absent).
	Domains map[string]DomainPermission `json:"domains,omitempty" schema:"nullable"`
	// UnixSockets maps an absolute socket path to "allow" or "deny".
	UnixSockets map[string]UnixSocketPermission `json:"unixSockets,omitempty" schema:"nullable"`
}

// ProxyMode is "full" or "limited" (GET, HEAD and OPTIONS only).
type ProxyMode string

// Proxy modes.
const (
	ProxyModeFull    ProxyMode = "full"
	ProxyModeLimited ProxyMode = "limited"
)

// DomainPermission is a domain's verdict: "allow", "deny" or "none".
type DomainPermission string

// UnixSocketPermission is a Unix socket's verdict: "allow" or "deny".
type UnixSocketPermission string

// Verdicts of domains and Unix sockets.
const (
	PermissionAllow = "allow"
	PermissionDeny  = "deny"
	PermissionNone  = "none"
)

// Flag is a boolean member decoded as serde decodes a bool: null and
// every other type are errors with its texts.
type Flag bool

// UnmarshalJSON implements json.Unmarshaler.
func (f *Flag) UnmarshalJSON(b []byte) error {
	v, err := proxyBool(b)
	if err != nil {
		return err
	}
	*f = Flag(v)
	return nil
}

// invalidParams is a -32602 error with msg.
func invalidParams(msg string) *rpc.Error { return rpc.Errorf(rpc.CodeInvalidParams, "%s", msg) }

// RustDebug quotes s as Rust's Debug does: the texts the reference shows
// for strings (serde's errors, its config messages).
func RustDebug(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == 0:
			b.WriteString(`\0`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u{%x}`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// valueKind describes a JSON value as the reference does where it decodes
// from a JSON value: every number is "number".
func valueKind(raw json.RawMessage) string {
	switch raw[0] {
	case '"':
		var s string
		_ = json.Unmarshal(raw, &s)
		return "string " + RustDebug(s)
	case 't', 'f':
		return "boolean `" + string(raw) + "`"
	case 'n':
		return "null"
	case '[':
		return "sequence"
	case '{':
		return "map"
	}
	return "number"
}

// contentKind is valueKind where the reference decodes through serde's
// buffered content (a flattened map): numbers keep their value.
func contentKind(raw json.RawMessage) string {
	if raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9' {
		return serdeKind(raw)
	}
	return valueKind(raw)
}

func proxyTypeErr(raw json.RawMessage, want string) *rpc.Error {
	return invalidParams("invalid type: " + valueKind(raw) + ", expected " + want)
}

// proxyMembers is members with -32602 errors (the value is valid JSON
// here: encoding/json checked it).
func proxyMembers(raw json.RawMessage) ([]string, []json.RawMessage, *rpc.Error) {
	keys, vals, err := members(raw)
	if err != nil {
		return nil, nil, invalidParams(strings.TrimPrefix(err.Message, "Invalid request: "))
	}
	return keys, vals, nil
}

func proxyBool(raw json.RawMessage) (bool, *rpc.Error) {
	switch string(raw) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, proxyTypeErr(raw, "a boolean")
}

// variant decodes an enum of unit variants, given as its name or as a map
// of one member, the name, whose value is null. kind describes a value of
// the wrong type.
func variant(raw json.RawMessage, names []string, kind func(json.RawMessage) string) (string, *rpc.Error) {
	name := ""
	switch raw[0] {
	case '"':
		_ = json.Unmarshal(raw, &name)
	case '{':
		keys, vals, err := proxyMembers(raw)
		if err != nil {
			return "", err
		}
		if len(keys) != 1 {
			return "", invalidParams("invalid value: map, expected map with a single key")
		}
		name = keys[0]
		if !isNull(vals[0]) && knownName(name, names) {
			return "", invalidParams("invalid type: " + kind(vals[0]) + ", expected unit")
		}
	default:
		return "", invalidParams("invalid type: " + kind(raw) + ", expected string or map")
	}
	if !knownName(name, names) {
		return "", invalidParams(fmt.Sprintf("unknown variant `%s`, expected %s", name, oneOf(names)))
	}
	return name, nil
}

func knownName(name string, names []string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// oneOf lists names as serde's "unknown variant" does.
func oneOf(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "`" + n + "`"
	}
	if len(q) == 2 {
		return q[0] + " or " + q[1]
	}
	return "one of " + strings.Join(q, ", ")
}

var (
	modeNames       = []string{"limited", "full"}
	domainNames     = []string{"none", "allow", "deny"}
	unixSocketNames = []string{"allow", "deny"}
)

// UnmarshalJSON implements json.Unmarshaler with the reference's texts
// (RemoteNetworkProxyLaunchConfig): an object, or an array of its five
// members in order.
func (n *NetworkProxyParams) UnmarshalJSON(raw []byte) error {
	raw = bytes.TrimSpace(raw)
	var keys []string
	var vals []json.RawMessage
	switch raw[0] {
	case '{':
		var err *rpc.Error
		if keys, vals, err = proxyMembers(raw); err != nil {
			return err
		}
	case '[':
		vals = fastItems(raw)
		if len(vals) == 0 {
			return invalidParams("invalid length 0, expected struct RemoteNetworkProxyLaunchConfig with 5 elements")
		}
		keys = []string{"proxy", "policyDecisionTimeoutMs", "executionId", "auditMetadata", "(fifth)"}[:min(len(vals), 5)]
		vals = vals[:len(keys)]
	default:
		return proxyTypeErr(raw, "struct RemoteNetworkProxyLaunchConfig")
	}
	var out NetworkProxyParams
	hasProxy := false
	for i, k := range keys {
		v := vals[i]
		switch k {
		case "proxy":
			if err := out.Proxy.decode(v); err != nil {
				return err
			}
			hasProxy = true
		case "policyDecisionTimeoutMs":
			if isNull(v) {
				out.PolicyDecisionTimeoutMs = nil
				continue
			}
			if v[0] != '-' && (v[0] < '0' || v[0] > '9') {
				return proxyTypeErr(v, "u64")
			}
			u, err := strconv.ParseUint(string(v), 10, 64)
			if err != nil {
				return invalidParams("invalid number")
			}
			out.PolicyDecisionTimeoutMs = &u
		case "executionId":
			if isNull(v) {
				out.ExecutionID = nil
				continue
			}
			var s string
			if v[0] != '"' || json.Unmarshal(v, &s) != nil {
				return proxyTypeErr(v, "a string")
			}
			out.ExecutionID = &s
		case "auditMetadata":
			if err := auditMetadata(v); err != nil {
				return err
			}
			out.AuditMetadata = append(json.RawMessage(nil), v...)
		}
	}
	if !hasProxy {
		return invalidParams("missing field `proxy`")
	}
	*n = out
	return nil
}

// auditMetadata checks the shape of networkProxy.auditMetadata, a struct
// of nine members whose names the reference does not show: an object, or
// an array of nine.
func auditMetadata(v json.RawMessage) *rpc.Error {
	switch v[0] {
	case '{':
		return nil
	case '[':
		items := fastItems(v)
		if len(items) == 0 {
			return invalidParams("invalid length 0, expected struct NetworkProxyAuditMetadata with 9 elements")
		}
		return nil
	}
	return proxyTypeErr(v, "struct NetworkProxyAuditMetadata")
}

// proxyRequired are ProxyConfig's required members in the order the
// reference reports a missing one.
var proxyRequired = []string{"enabled", "enableSocks5", "enableSocks5Udp", "allowUpstreamProxy", "dangerouslyAllowAllUnixSockets", "mode", "allowLocalBinding"}

// decode reads networkProxy.proxy (RemoteNetworkProxyConfig, an object
// only).
func (c *ProxyConfig) decode(raw json.RawMessage) *rpc.Error {
	if raw[0] != '{' {
		return proxyTypeErr(raw, "struct RemoteNetworkProxyConfig")
	}
	keys, vals, err := proxyMembers(raw)
	if err != nil {
		return err
	}
	var out ProxyConfig
	seen := map[string]bool{}
	flags := map[string]*bool{
		"enabled": &out.Enabled, "enableSocks5": &out.EnableSocks5, "enableSocks5Udp": &out.EnableSocks5UDP,
		"allowUpstreamProxy": &out.AllowUpstreamProxy, "dangerouslyAllowAllUnixSockets": &out.DangerouslyAllowAllUnixSockets,
		"allowLocalBinding": &out.AllowLocalBinding,
	}
	for i, k := range keys {
		v := vals[i]
		switch k {
		case "mode":
			m, err := variant(v, modeNames, valueKind)
			if err != nil {
				return err
			}
			out.Mode = ProxyMode(m)
		case "domains":
			if out.Domains, err = domainsOf(v); err != nil {
				return err
			}
		case "unixSockets":
			if out.UnixSockets, err = unixSocketsOf(v); err != nil {
				return err
			}
		default:
			p, ok := flags[k]
			if !ok {
				continue
			}
			if *p, err = proxyBool(v); err != nil {
				return err
			}
		}
		seen[k] = true
	}
	for _, k := range proxyRequired {
		if !seen[k] {
			return invalidParams("missing field `" + k + "`")
		}
	}
	*c = out
	return nil
}

func domainsOf(v json.RawMessage) (map[string]DomainPermission, *rpc.Error) {
	if isNull(v) {
		return nil, nil
	}
	if v[0] != '{' {
		return nil, proxyTypeErr(v, "a map")
	}
	keys, vals, err := proxyMembers(v)
	if err != nil {
		return nil, err
	}
	out := make(map[string]DomainPermission, len(keys))
	for i, k := range keys {
		name, err := variant(vals[i], domainNames, valueKind)
		if err != nil {
			return nil, err
		}
		out[k] = DomainPermission(name)
	}
	return out, nil
}

// unixSocketsOf reads NetworkUnixSocketPermissions: an object whose every
// member is a path and its verdict (a flattened map, whose wrong values
// the reference describes with their numbers).
func unixSocketsOf(v json.RawMessage) (map[string]UnixSocketPermission, *rpc.Error) {
	if isNull(v) {
		return nil, nil
	}
	if v[0] != '{' {
		return nil, proxyTypeErr(v, "struct NetworkUnixSocketPermissions")
	}
	keys, vals, err := proxyMembers(v)
	if err != nil {
		return nil, err
	}
	out := make(map[string]UnixSocketPermission, len(keys))
	for i, k := range keys {
		name, err := variant(vals[i], unixSocketNames, contentKind)
		if err != nil {
			return nil, err
		}
		out[k] = UnixSocketPermission(name)
	}
	return out, nil
}

// Validate makes the reference's checks of a decoded networkProxy, in its
// order: a review timeout of zero, a proxy that is not enabled, an
// allowed Unix socket path that is not absolute or holds a NUL (checked
// in path order). The domain patterns are the proxy's to check.
func (n *NetworkProxyParams) Validate() *rpc.Error {
	if n.PolicyDecisionTimeoutMs != nil && *n.PolicyDecisionTimeoutMs == 0 {
		return invalidParams("network policy decision callback timeout must be nonzero")
	}
	if !n.Proxy.Enabled {
		return ErrInvalidNetworkProxyConfig("executor-local network proxy launch requires an enabled proxy")
	}
	var allowed []string
	for p, v := range n.Proxy.UnixSockets {
		if v == PermissionAllow {
			allowed = append(allowed, p)
		}
	}
	sort.Strings(allowed)
	for i, p := range allowed {
		if !strings.HasPrefix(p, "/") || strings.ContainsRune(p, 0) {
			return ErrInvalidNetworkProxyConfig(fmt.Sprintf("invalid network.allow_unix_sockets[%d]: expected a NUL-free absolute path for Linux, got %s", i, RustDebug(p)))
		}
	}
	return nil
}

// ErrInvalidNetworkProxyConfig is the answer to a networkProxy the proxy
// cannot be built from (its domain patterns included).
func ErrInvalidNetworkProxyConfig(msg string) *rpc.Error {
	return invalidParams("invalid network proxy config: " + msg)
}

// NetworkPolicyRequestParams are the params of network/policyRequest: the
// connection a command's proxy holds until the client answers.
type NetworkPolicyRequestParams struct {
	ProcessID string             `json:"processId"`
	Request   NetworkPolicyQuery `json:"request"`
}

// NetworkPolicyQuery is the connection under review.
type NetworkPolicyQuery struct {
	// Protocol is "http", "https_connect" or "socks5_tcp".
	Protocol string `json:"protocol"`
	Host     string `json:"host"`
	Port     uint16 `json:"port"`
}

// NetworkPolicyResult is the client's answer to network/policyRequest.
type NetworkPolicyResult struct {
	Decision NetworkPolicyVerdict `json:"decision" rpc:"required"`
}

// NetworkPolicyVerdict is the answer's decision.
type NetworkPolicyVerdict struct {
	Type string `json:"type" rpc:"required" jsonschema:"enum=allow,enum=deny"`
}

// DecodeNetworkPolicyResult reads the client's answer to
// network/policyRequest: allow is true only for {"decision":{"type":
// "allow"}}. Any other shape is an error that says what is wrong, for the
// server to log before it denies.
func DecodeNetworkPolicyResult(raw json.RawMessage) (allow bool, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return false, fmt.Errorf("malformed network/policyRequest answer: want an object, got %.200s", raw)
	}
	var r struct {
		Decision *struct {
			Type *string `json:"type"`
		} `json:"decision"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return false, fmt.Errorf("malformed network/policyRequest answer: %w", err)
	}
	switch {
	case r.Decision == nil:
		return false, fmt.Errorf("malformed network/policyRequest answer: no decision object in %.200s", raw)
	case r.Decision.Type == nil:
		return false, fmt.Errorf("malformed network/policyRequest answer: no decision.type in %.200s", raw)
	case *r.Decision.Type == PermissionAllow:
		return true, nil
	case *r.Decision.Type == PermissionDeny:
		return false, nil
	}
	return false, fmt.Errorf("malformed network/policyRequest answer: decision.type %q is neither allow nor deny", *r.Decision.Type)
}

// NetworkPolicyDecisionParams are the params of network/policyDecision,
// one decision of a command's proxy, its members in the reference's order
// (recorded from 0.169.0 for HTTP, CONNECT and SOCKS5 requests, allowed
// and denied by the profile or the review).
type NetworkPolicyDecisionParams struct {
	ProcessID string `json:"processId"`
	// Timestamp is RFC 3339 in UTC with milliseconds and a Z.
	Timestamp string `json:"timestamp"`
	// Scope is "domain".
	Scope string `json:"scope"`
	// Decision is "allow" or "deny".
	Decision string `json:"decision"`
	// Source is "baseline_policy" (the profile) or "decider" (the
	// client's review).
	Source string `json:"source"`
	// Reason is why: "allow", "denied", "not_allowed" (also every review's
	// reason), "not_allowed_local", ….
	Reason string `json:"reason"`
	// Protocol is "http", "https_connect" or "socks5_tcp".
	Protocol string `json:"protocol"`
	Host     string `json:"host"`
	Port     uint16 `json:"port"`
	// Method is the HTTP method ("CONNECT" for a tunnel); a SOCKS5
	// connection has none and the member is left out.
	Method string `json:"method,omitempty"`
	// Client is the address of the command's end of the connection.
	Client string `json:"client"`
	// PolicyOverride is true when the client's review allowed what the
	// profile did not.
	PolicyOverride bool `json:"policyOverride"`
}

// AppendNetworkPolicyDecision appends the network/policyDecision
// notification for p as one JSON-RPC line body (no newline): the bytes
// encoding/json writes for {"method":…,"params":p}.
func AppendNetworkPolicyDecision(dst []byte, p *NetworkPolicyDecisionParams) []byte {
	dst = append(dst, `{"method":"network/policyDecision","params":{"processId":`...)
	dst = appendJSONString(dst, p.ProcessID)
	dst = append(dst, `,"timestamp":`...)
	dst = appendJSONString(dst, p.Timestamp)
	dst = append(dst, `,"scope":`...)
	dst = appendJSONString(dst, p.Scope)
	dst = append(dst, `,"decision":`...)
	dst = appendJSONString(dst, p.Decision)
	dst = append(dst, `,"source":`...)
	dst = appendJSONString(dst, p.Source)
	dst = append(dst, `,"reason":`...)
	dst = appendJSONString(dst, p.Reason)
	dst = append(dst, `,"protocol":`...)
	dst = appendJSONString(dst, p.Protocol)
	dst = append(dst, `,"host":`...)
	dst = appendJSONString(dst, p.Host)
	dst = append(dst, `,"port":`...)
	dst = strconv.AppendUint(dst, uint64(p.Port), 10)
	if p.Method != "" {
		dst = append(dst, `,"method":`...)
		dst = appendJSONString(dst, p.Method)
	}
	dst = append(dst, `,"client":`...)
	dst = appendJSONString(dst, p.Client)
	dst = append(dst, `,"policyOverride":`...)
	dst = strconv.AppendBool(dst, p.PolicyOverride)
	return append(dst, "}}"...)
}
