package wire_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wire"
)

// proxyOK is a networkProxy.proxy with its seven required members.
const proxyOK = `"enabled":true,"enableSocks5":true,"enableSocks5Udp":false,"allowUpstreamProxy":false,"dangerouslyAllowAllUnixSockets":false,"mode":"full","allowLocalBinding":false`

// startWith is process/start params with the members of extra.
func startWith(extra string) string {
	return `{"processId":"p","argv":["true"],"cwd":"file:///tmp","env":{},"tty":false,` + extra + `}`
}

// TestNetworkProxyDecode holds the decoder of process/start's networkProxy
// and enforceManagedNetwork to the answers of the reference 0.169.0,
// recorded from `codex exec-server --listen stdio` (the e2e test
// TestNetworkProxyStartDecode replays them through the binary).
func TestNetworkProxyDecode(t *testing.T) {
	for _, tc := range []struct{ params, want string }{
		{`"networkProxy":{}`, "missing field `proxy`"},
		{`"networkProxy":null`, ""},
		{`"networkProxy":"x"`, `invalid type: string "x", expected struct RemoteNetworkProxyLaunchConfig`},
		{`"networkProxy":5`, `invalid type: number, expected struct RemoteNetworkProxyLaunchConfig`},
		{`"networkProxy":[]`, `invalid length 0, expected struct RemoteNetworkProxyLaunchConfig with 5 elements`},
		{`"networkProxy":[{}]`, "missing field `enabled`"},
		{`"networkProxy":{"proxy":null}`, `invalid type: null, expected struct RemoteNetworkProxyConfig`},
		{`"networkProxy":{"proxy":[]}`, `invalid type: sequence, expected struct RemoteNetworkProxyConfig`},
		{`"networkProxy":{"proxy":5}`, `invalid type: number, expected struct RemoteNetworkProxyConfig`},
		{`"networkProxy":{"proxy":{}}`, "missing field `enabled`"},
		{`"networkProxy":{"proxy":{"enabled":true}}`, "missing field `enableSocks5`"},
		{`"networkProxy":{"proxy":{"enabled":true,"enableSocks5":true}}`, "missing field `enableSocks5Udp`"},
		{`"networkProxy":{"proxy":{"enabled":true,"enableSocks5":true,"enableSocks5Udp":false}}`, "missing field `allowUpstreamProxy`"},
		{`"networkProxy":{"proxy":{"enabled":true,"enableSocks5":true,"enableSocks5Udp":false,"allowUpstreamProxy":false}}`, "missing field `dangerouslyAllowAllUnixSockets`"},
		{`"networkProxy":{"proxy":{"enabled":true,"enableSocks5":true,"enableSocks5Udp":false,"allowUpstreamProxy":false,"dangerouslyAllowAllUnixSockets":false}}`, "missing field `mode`"},
		{`"networkProxy":{"proxy":{"enabled":true,"enableSocks5":true,"enableSocks5Udp":false,"allowUpstreamProxy":false,"dangerouslyAllowAllUnixSockets":false,"mode":"full"}}`, "missing field `allowLocalBinding`"},
		{`"networkProxy":{"proxy":{"mode":"full"}}`, "missing field `enabled`"},
		{`"networkProxy":{"proxy":{"enabled":"yes"}}`, `invalid type: string "yes", expected a boolean`},
		{`"networkProxy":{"proxy":{"enabled":1}}`, `invalid type: number, expected a boolean`},
		{`"networkProxy":{"proxy":{"enabled":1.5}}`, `invalid type: number, expected a boolean`},
		{`"networkProxy":{"proxy":{"enabled":null}}`, `invalid type: null, expected a boolean`},
		{`"networkProxy":{"proxy":{"enabled":[]}}`, `invalid type: sequence, expected a boolean`},
		{`"networkProxy":{"proxy":{"enabled":{}}}`, `invalid type: map, expected a boolean`},
		{`"networkProxy":{"proxy":{"enabled":"x","mode":"bogus"}}`, `invalid type: string "x", expected a boolean`},
		{`"networkProxy":{"proxy":{"mode":"bogus","enabled":"x"}}`, "unknown variant `bogus`, expected `limited` or `full`"},
		{`"networkProxy":{"proxy":{` + strings.Replace(proxyOK, `"full"`, `"Limited"`, 1) + `}}`, "unknown variant `Limited`, expected `limited` or `full`"},
		{`"networkProxy":{"proxy":{` + strings.Replace(proxyOK, `"full"`, `1`, 1) + `}}`, "invalid type: number, expected string or map"},
		{`"networkProxy":{"proxy":{` + strings.Replace(proxyOK, `"full"`, `true`, 1) + `}}`, "invalid type: boolean `true`, expected string or map"},
		{`"networkProxy":{"proxy":{` + strings.Replace(proxyOK, `"full"`, `null`, 1) + `}}`, "invalid type: null, expected string or map"},
		{`"networkProxy":{"proxy":{` + strings.Replace(proxyOK, `"full"`, `{"limited":5}`, 1) + `}}`, "invalid type: number, expected unit"},
		{`"networkProxy":{"proxy":{` + strings.Replace(proxyOK, `"full"`, `{}`, 1) + `}}`, "invalid value: map, expected map with a single key"},
		{`"networkProxy":{"proxy":{` + strings.Replace(proxyOK, `"full"`, `{"limited":null,"full":null}`, 1) + `}}`, "invalid value: map, expected map with a single key"},
		{`"networkProxy":{"proxy":{` + strings.Replace(proxyOK, `"full"`, `{"limited":null}`, 1) + `}}`, ""},
		{`"networkProxy":{"proxy":{` + strings.Replace(proxyOK, `"full"`, `"limited"`, 1) + `}}`, ""},
		{`"networkProxy":{"proxy":{` + proxyOK + `,"domains":{"a.com":"maybe"}}}`, "unknown variant `maybe`, expected one of `none`, `allow`, `deny`"},
		{`"networkProxy":{"proxy":{` + proxyOK + `,"domains":{"a.com":{"bogus":null}}}}`, "unknown variant `bogus`, expected one of `none`, `allow`, `deny`"},
		{`"networkProxy":{"proxy":{` + proxyOK + `,"domains":{"a.com":{"allow":1}}}}`, "invalid type: number, expected unit"},
		{`"networkProxy":{"proxy":{` + proxyOK + `,"domains":{"a":{"allow":null,"deny":null}}}}`, "invalid value: map, expected map with a single key"},
		{`"networkProxy":{"proxy":{` + proxyOK + `,"domains":["a.com"]}}`, "invalid type: sequence, expected a map"},
		{`"networkProxy":{"proxy":{` + proxyOK + `,"domains":"x"}}`, `invalid type: string "x", expected a map`},
		{`"networkProxy":{"proxy":{` + proxyOK + `,"domains":{"a.com":5}}}`, "invalid type: number, expected string or map"},
		{`"networkProxy":{"proxy":{` + proxyOK + `,"domains":{"a.com":1.5}}}`, "invalid type: number, expected string or map"},
		{`"networkProxy":{"proxy":{` + proxyOK + `,"domains":{"a.com":null}}}`, "invalid type: null, expected string or map"},
		{`"networkProxy":{"proxy":{` + proxyOK + `,"domains":{"a.com":"none","b.com":{"allow":null}}}}`, ""},
		{`"networkProxy":{"proxy":{` + proxyOK + `,"domains":null,"unixSockets":null}}`, ""},
		{`"networkProxy":{"proxy":{` + proxyOK + `,"unixSockets":5}}`, "invalid type: number, expected struct NetworkUnixSocketPermissions"},
		{`"networkProxy":{"proxy":{` + proxyOK + `,"unixSockets":[]}}`, "invalid type: sequence, expected struct NetworkUnixSocketPermissions"},
		{`"networkProxy":{"proxy":{` + proxyOK + `,"unixSockets":"x"}}`, `invalid type: string "x", expected struct NetworkUnixSocketPermissions`},
		{`"networkProxy":{"proxy":{` + proxyOK + `,"unixSockets":{"/a":"maybe"}}}`, "unknown variant `maybe`, expected `allow` or `deny`"},
		{`"networkProxy":{"proxy":{` + proxyOK + `,"unixSockets":{"/a":"none"}}}`, "unknown variant `none`, expected `allow` or `deny`"},
		{`"networkProxy":{"proxy":{` + proxyOK + `,"unixSockets":{"allow":5}}}`, "invalid type: integer `5`, expected string or map"},
		{`"networkProxy":{"proxy":{` + proxyOK + `,"unixSockets":{"/a":-1}}}`, "invalid type: integer `-1`, expected string or map"},
		{`"networkProxy":{"proxy":{` + proxyOK + `,"unixSockets":{"/a":1.5}}}`, "invalid type: floating point `1.5`, expected string or map"},
		{`"networkProxy":{"proxy":{` + proxyOK + `,"unixSockets":{"/a":true}}}`, "invalid type: boolean `true`, expected string or map"},
		{`"networkProxy":{"proxy":{` + proxyOK + `,"unixSockets":{"/a":null}}}`, "invalid type: null, expected string or map"},
		{`"networkProxy":{"proxy":{` + proxyOK + `,"unixSockets":{"/a":[]}}}`, "invalid type: sequence, expected string or map"},
		{`"networkProxy":{"proxy":{` + proxyOK + `,"unixSockets":{"/a":{"allow":null}}}}`, ""},
		{`"networkProxy":{"proxy":{` + proxyOK + `},"policyDecisionTimeoutMs":-1}`, "invalid number"},
		{`"networkProxy":{"proxy":{` + proxyOK + `},"policyDecisionTimeoutMs":1.5}`, "invalid number"},
		{`"networkProxy":{"proxy":{` + proxyOK + `},"policyDecisionTimeoutMs":1e3}`, "invalid number"},
		{`"networkProxy":{"proxy":{` + proxyOK + `},"policyDecisionTimeoutMs":18446744073709551616}`, "invalid number"},
		{`"networkProxy":{"proxy":{` + proxyOK + `},"policyDecisionTimeoutMs":18446744073709551615}`, ""},
		{`"networkProxy":{"proxy":{` + proxyOK + `},"policyDecisionTimeoutMs":"5"}`, `invalid type: string "5", expected u64`},
		{`"networkProxy":{"proxy":{` + proxyOK + `},"policyDecisionTimeoutMs":true}`, "invalid type: boolean `true`, expected u64"},
		{`"networkProxy":{"proxy":{` + proxyOK + `},"policyDecisionTimeoutMs":[]}`, "invalid type: sequence, expected u64"},
		{`"networkProxy":{"proxy":{` + proxyOK + `},"policyDecisionTimeoutMs":null}`, ""},
		{`"networkProxy":{"policyDecisionTimeoutMs":-1,"proxy":{}}`, "invalid number"},
		{`"networkProxy":{"policyDecisionTimeoutMs":"x"}`, `invalid type: string "x", expected u64`},
		{`"networkProxy":{"proxy":{` + proxyOK + `},"executionId":5}`, "invalid type: number, expected a string"},
		{`"networkProxy":{"proxy":{` + proxyOK + `},"executionId":true}`, "invalid type: boolean `true`, expected a string"},
		{`"networkProxy":{"proxy":{` + proxyOK + `},"executionId":null}`, ""},
		{`"networkProxy":{"proxy":{` + proxyOK + `},"auditMetadata":5}`, "invalid type: number, expected struct NetworkProxyAuditMetadata"},
		{`"networkProxy":{"proxy":{` + proxyOK + `},"auditMetadata":null}`, "invalid type: null, expected struct NetworkProxyAuditMetadata"},
		{`"networkProxy":{"proxy":{` + proxyOK + `},"auditMetadata":"x"}`, `invalid type: string "x", expected struct NetworkProxyAuditMetadata`},
		{`"networkProxy":{"proxy":{` + proxyOK + `},"auditMetadata":[]}`, "invalid length 0, expected struct NetworkProxyAuditMetadata with 9 elements"},
		{`"networkProxy":{"proxy":{` + proxyOK + `},"auditMetadata":{}}`, ""},
		{`"networkProxy":{"proxy":{` + proxyOK + `},"zzz":5}`, ""},
		{`"enforceManagedNetwork":"yes"`, `invalid type: string "yes", expected a boolean`},
		{`"enforceManagedNetwork":null`, `invalid type: null, expected a boolean`},
		{`"enforceManagedNetwork":1`, `invalid type: number, expected a boolean`},
		{`"enforceManagedNetwork":true`, ""},
	} {
		var p wire.StartParams
		err := rpc.DecodeParams(json.RawMessage(startWith(tc.params)), &p)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want it accepted", tc.params, err)
		case tc.want != "" && err == nil:
			t.Errorf("%s: accepted, want %q", tc.params, tc.want)
		case tc.want != "" && err.Error() != fmt.Sprintf("-32602 %s", tc.want) && !rpcIs(err, -32602, tc.want):
			t.Errorf("%s:\n got %v\nwant -32602 %s", tc.params, err, tc.want)
		}
	}
}

func rpcIs(err error, code int, msg string) bool {
	e, ok := err.(*rpc.Error)
	return ok && int(e.Code) == code && e.Message == msg
}

// TestNetworkProxyValue: what a valid networkProxy decodes to.
func TestNetworkProxyValue(t *testing.T) {
	var p wire.StartParams
	raw := startWith(`"enforceManagedNetwork":true,"networkProxy":{"proxy":{"enabled":true,"enableSocks5":false,"enableSocks5Udp":true,"allowUpstreamProxy":true,"dangerouslyAllowAllUnixSockets":true,"mode":{"limited":null},"allowLocalBinding":true,` +
		`"domains":{"a.com":"allow","b.com":{"deny":null},"c.com":"none"},"unixSockets":{"/run/x.sock":"allow","/run/y.sock":{"deny":null}}},"policyDecisionTimeoutMs":5000,"executionId":"e1","auditMetadata":{"k":1}}`)
	if err := rpc.DecodeParams(json.RawMessage(raw), &p); err != nil {
		t.Fatal(err)
	}
	n := p.NetworkProxy
	want := wire.ProxyConfig{Enabled: true, EnableSocks5UDP: true, AllowUpstreamProxy: true, DangerouslyAllowAllUnixSockets: true, Mode: wire.ProxyModeLimited, AllowLocalBinding: true,
		Domains:     map[string]wire.DomainPermission{"a.com": "allow", "b.com": "deny", "c.com": "none"},
		UnixSockets: map[string]wire.UnixSocketPermission{"/run/x.sock": "allow", "/run/y.sock": "deny"}}
	if !bool(p.EnforceManagedNetwork) || n == nil || fmt.Sprint(n.Proxy) != fmt.Sprint(want) || *n.PolicyDecisionTimeoutMs != 5000 || *n.ExecutionID != "e1" || string(n.AuditMetadata) != `{"k":1}` {
		t.Errorf("decoded %+v %+v", p.EnforceManagedNetwork, n)
	}
	var none wire.StartParams
	if err := rpc.DecodeParams(json.RawMessage(startWith(`"networkProxy":null`)), &none); err != nil || none.NetworkProxy != nil || none.EnforceManagedNetwork {
		t.Errorf("null: %+v %v", none, err)
	}
}

// TestNetworkProxyValidate: the checks the reference makes once the params
// are decoded, with its texts and in its order.
func TestNetworkProxyValidate(t *testing.T) {
	for _, tc := range []struct{ np, want string }{
		{`{"proxy":{` + proxyOK + `},"policyDecisionTimeoutMs":5000}`, ""},
		{`{"proxy":{` + proxyOK + `},"policyDecisionTimeoutMs":0}`, "network policy decision callback timeout must be nonzero"},
		{`{"proxy":{` + strings.Replace(proxyOK, `"enabled":true`, `"enabled":false`, 1) + `}}`, "invalid network proxy config: executor-local network proxy launch requires an enabled proxy"},
		{`{"proxy":{` + strings.Replace(proxyOK, `"enabled":true`, `"enabled":false`, 1) + `},"policyDecisionTimeoutMs":0}`, "network policy decision callback timeout must be nonzero"},
		{`{"proxy":{` + strings.Replace(proxyOK, `"enabled":true`, `"enabled":false`, 1) + `,"unixSockets":{"rel":"allow"}}}`, "invalid network proxy config: executor-local network proxy launch requires an enabled proxy"},
		{`{"proxy":{` + proxyOK + `,"unixSockets":{"rel.sock":"allow"}}}`, `invalid network proxy config: invalid network.allow_unix_sockets[0]: expected a NUL-free absolute path for Linux, got "rel.sock"`},
		{`{"proxy":{` + proxyOK + `,"unixSockets":{"/a\u0000b":"allow"}}}`, `invalid network proxy config: invalid network.allow_unix_sockets[0]: expected a NUL-free absolute path for Linux, got "/a\0b"`},
		{`{"proxy":{` + proxyOK + `,"unixSockets":{"/ok":"allow","rel":"allow"}}}`, `invalid network proxy config: invalid network.allow_unix_sockets[1]: expected a NUL-free absolute path for Linux, got "rel"`},
		{`{"proxy":{` + proxyOK + `,"unixSockets":{"rel":"deny"}}}`, ""},
		{`{"proxy":{` + proxyOK + `,"unixSockets":{"rel":"allow"}},"policyDecisionTimeoutMs":0}`, "network policy decision callback timeout must be nonzero"},
	} {
		var n wire.NetworkProxyParams
		if err := json.Unmarshal([]byte(tc.np), &n); err != nil {
			t.Fatalf("%s: %v", tc.np, err)
		}
		err := n.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.np, err)
		case tc.want != "" && (err == nil || err.Code != rpc.CodeInvalidParams || err.Message != tc.want):
			t.Errorf("%s:\n got %v\nwant -32602 %s", tc.np, err, tc.want)
		}
	}
}

// TestNetworkPolicyResult: only {"decision":{"type":"allow"}} allows; a
// deny is a deny; every other answer (the reference treats them all as a
// deny, silently) is an error the server logs before it denies.
func TestNetworkPolicyResult(t *testing.T) {
	for _, tc := range []struct {
		raw   string
		allow bool
		bad   bool
	}{
		{`{"decision":{"type":"allow"}}`, true, false},
		{`{"decision":{"type":"allow","note":1},"x":2}`, true, false},
		{`{"decision":{"type":"deny"}}`, false, false},
		{`{}`, false, true},
		{`{"decision":"allow"}`, false, true},
		{`{"decision":{}}`, false, true},
		{`{"decision":{"type":"Allow"}}`, false, true},
		{`{"decision":{"type":1}}`, false, true},
		{`null`, false, true},
		{`"allow"`, false, true},
		{``, false, true},
	} {
		allow, err := wire.DecodeNetworkPolicyResult(json.RawMessage(tc.raw))
		if allow != tc.allow || (err != nil) != tc.bad {
			t.Errorf("%s: allow %v, err %v", tc.raw, allow, err)
		}
	}
}

// TestNetworkPolicyDecisionEncoder holds the hand encoder to encoding/json
// of the same params and to notifications the reference 0.169.0 sent
// (process/start with networkProxy and policyDecisionTimeoutMs, curl
// through its proxy to a loopback server; recorded 2026-11-29).
func TestNetworkPolicyDecisionEncoder(t *testing.T) {
	for _, want := range []string{
		`{"method":"network/policyDecision","params":{"processId":"np1","timestamp":"2026-11-29T04:47:53.983Z","scope":"domain","decision":"allow","source":"baseline_policy","reason":"allow","protocol":"http","host":"127.0.0.1","port":18765,"method":"GET","client":"127.0.0.1:41272","policyOverride":false}}`,
		`{"method":"network/policyDecision","params":{"processId":"np1","timestamp":"2026-11-29T04:47:54.077Z","scope":"domain","decision":"allow","source":"baseline_policy","reason":"allow","protocol":"https_connect","host":"127.0.0.1","port":18765,"method":"CONNECT","client":"127.0.0.1:41274","policyOverride":false}}`,
		`{"method":"network/policyDecision","params":{"processId":"np1","timestamp":"2026-11-29T04:47:54.166Z","scope":"domain","decision":"allow","source":"baseline_policy","reason":"allow","protocol":"socks5_tcp","host":"127.0.0.1","port":18765,"client":"127.0.0.1:44950","policyOverride":false}}`,
		`{"method":"network/policyDecision","params":{"processId":"np1","timestamp":"2026-11-29T04:47:54.265Z","scope":"domain","decision":"allow","source":"decider","reason":"not_allowed","protocol":"http","host":"localhost","port":18765,"method":"GET","client":"127.0.0.1:41278","policyOverride":true}}`,
		`{"method":"network/policyDecision","params":{"processId":"np1","timestamp":"2026-11-29T04:48:00.528Z","scope":"domain","decision":"deny","source":"baseline_policy","reason":"not_allowed_local","protocol":"http","host":"localhost","port":18765,"method":"GET","client":"127.0.0.1:51018","policyOverride":false}}`,
		`{"method":"network/policyDecision","params":{"processId":"np1","timestamp":"2026-11-29T04:48:00.602Z","scope":"domain","decision":"deny","source":"baseline_policy","reason":"denied","protocol":"http","host":"127.0.0.2","port":18765,"method":"GET","client":"127.0.0.1:51022","policyOverride":false}}`,
		`{"method":"network/policyDecision","params":{"processId":"np1","timestamp":"2026-11-29T04:48:05.765Z","scope":"domain","decision":"deny","source":"decider","reason":"not_allowed","protocol":"http","host":"localhost","port":18765,"method":"GET","client":"127.0.0.1:38150","policyOverride":false}}`,
		`{"method":"network/policyDecision","params":{"processId":"a\"\u003c\u0026\u003e\u2028","timestamp":"t","scope":"domain","decision":"deny","source":"decider","reason":"not_allowed","protocol":"socks5_tcp","host":"h","port":1,"client":"","policyOverride":false}}`,
	} {
		var n struct {
			Method string                           `json:"method"`
			Params wire.NetworkPolicyDecisionParams `json:"params"`
		}
		if err := json.Unmarshal([]byte(want), &n); err != nil {
			t.Fatal(err)
		}
		if got := string(wire.AppendNetworkPolicyDecision(nil, &n.Params)); got != want {
			t.Errorf("\n got %s\nwant %s", got, want)
		}
		if plain, err := json.Marshal(n); err != nil || string(plain) != want {
			t.Errorf("encoding/json:\n got %s %v\nwant %s", plain, err, want)
		}
	}
}

// TestNetworkPolicyRequestParams: the request the server sends, as the
// reference sent it (recorded with the decisions above).
func TestNetworkPolicyRequestParams(t *testing.T) {
	want := `{"processId":"np1","request":{"protocol":"http","host":"localhost","port":18765}}`
	got, err := json.Marshal(wire.NetworkPolicyRequestParams{ProcessID: "np1", Request: wire.NetworkPolicyQuery{Protocol: "http", Host: "localhost", Port: 18765}})
	if err != nil || string(got) != want {
		t.Errorf("got %s %v\nwant %s", got, err, want)
	}
}
