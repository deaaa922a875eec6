package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// netProxyOK is a networkProxy.proxy with its seven required members.
const netProxyOK = `"enabled":true,"enableSocks5":true,"enableSocks5Udp":false,"allowUpstreamProxy":false,"dangerouslyAllowAllUnixSockets":false,"mode":"full","allowLocalBinding":false`

// TestNetworkProxyStartDecode replays process/start requests with a
// malformed networkProxy or enforceManagedNetwork and expects the answers
// the reference 0.169.0 gave them (`codex exec-server --listen stdio`,
// initialize + initialized, then each request; recorded 2026-11-29), over
// stdio and WebSocket.
func TestNetworkProxyStartDecode(t *testing.T) {
	cases := []struct{ members, want string }{
		{`"networkProxy":{}`, "missing field `proxy`"},
		{`"networkProxy":"x"`, `invalid type: string "x", expected struct RemoteNetworkProxyLaunchConfig`},
		{`"networkProxy":5`, "invalid type: number, expected struct RemoteNetworkProxyLaunchConfig"},
		{`"networkProxy":[]`, "invalid length 0, expected struct RemoteNetworkProxyLaunchConfig with 5 elements"},
		{`"networkProxy":[{}]`, "missing field `enabled`"},
		{`"networkProxy":{"proxy":null}`, "invalid type: null, expected struct RemoteNetworkProxyConfig"},
		{`"networkProxy":{"proxy":[]}`, "invalid type: sequence, expected struct RemoteNetworkProxyConfig"},
		{`"networkProxy":{"proxy":{}}`, "missing field `enabled`"},
		{`"networkProxy":{"proxy":{"enabled":true}}`, "missing field `enableSocks5`"},
		{`"networkProxy":{"proxy":{"enabled":true,"enableSocks5":true}}`, "missing field `enableSocks5Udp`"},
		{`"networkProxy":{"proxy":{"enabled":true,"enableSocks5":true,"enableSocks5Udp":false}}`, "missing field `allowUpstreamProxy`"},
		{`"networkProxy":{"proxy":{"enabled":true,"enableSocks5":true,"enableSocks5Udp":false,"allowUpstreamProxy":false}}`, "missing field `dangerouslyAllowAllUnixSockets`"},
		{`"networkProxy":{"proxy":{"enabled":true,"enableSocks5":true,"enableSocks5Udp":false,"allowUpstreamProxy":false,"dangerouslyAllowAllUnixSockets":false}}`, "missing field `mode`"},
		{`"networkProxy":{"proxy":{"enabled":true,"enableSocks5":true,"enableSocks5Udp":false,"allowUpstreamProxy":false,"dangerouslyAllowAllUnixSockets":false,"mode":"full"}}`, "missing field `allowLocalBinding`"},
		{`"networkProxy":{"proxy":{"mode":"full"}}`, "missing field `enabled`"},
		{`"networkProxy":{"proxy":{"enabled":"yes"}}`, `invalid type: string "yes", expected a boolean`},
		{`"networkProxy":{"proxy":{"enabled":1}}`, "invalid type: number, expected a boolean"},
		{`"networkProxy":{"proxy":{"enabled":null}}`, "invalid type: null, expected a boolean"},
		{`"networkProxy":{"proxy":{"mode":"bogus","enabled":"x"}}`, "unknown variant `bogus`, expected `limited` or `full`"},
		{`"networkProxy":{"proxy":{` + strings.Replace(netProxyOK, `"full"`, `"bogus"`, 1) + `}}`, "unknown variant `bogus`, expected `limited` or `full`"},
		{`"networkProxy":{"proxy":{` + strings.Replace(netProxyOK, `"full"`, `1`, 1) + `}}`, "invalid type: number, expected string or map"},
		{`"networkProxy":{"proxy":{` + strings.Replace(netProxyOK, `"full"`, `true`, 1) + `}}`, "invalid type: boolean `true`, expected string or map"},
		{`"networkProxy":{"proxy":{` + strings.Replace(netProxyOK, `"full"`, `{"limited":5}`, 1) + `}}`, "invalid type: number, expected unit"},
		{`"networkProxy":{"proxy":{` + strings.Replace(netProxyOK, `"full"`, `{}`, 1) + `}}`, "invalid value: map, expected map with a single key"},
		{`"networkProxy":{"proxy":{` + netProxyOK + `,"domains":{"a.com":"maybe"}}}`, "unknown variant `maybe`, expected one of `none`, `allow`, `deny`"},
		{`"networkProxy":{"proxy":{` + netProxyOK + `,"domains":["a.com"]}}`, "invalid type: sequence, expected a map"},
		{`"networkProxy":{"proxy":{` + netProxyOK + `,"domains":"x"}}`, `invalid type: string "x", expected a map`},
		{`"networkProxy":{"proxy":{` + netProxyOK + `,"domains":{"a.com":null}}}`, "invalid type: null, expected string or map"},
		{`"networkProxy":{"proxy":{` + netProxyOK + `,"domains":{"a.com":{"allow":1}}}}`, "invalid type: number, expected unit"},
		{`"networkProxy":{"proxy":{` + netProxyOK + `,"unixSockets":5}}`, "invalid type: number, expected struct NetworkUnixSocketPermissions"},
		{`"networkProxy":{"proxy":{` + netProxyOK + `,"unixSockets":{"/a":"maybe"}}}`, "unknown variant `maybe`, expected `allow` or `deny`"},
		{`"networkProxy":{"proxy":{` + netProxyOK + `,"unixSockets":{"/a":"none"}}}`, "unknown variant `none`, expected `allow` or `deny`"},
		{`"networkProxy":{"proxy":{` + netProxyOK + `,"unixSockets":{"allow":5}}}`, "invalid type: integer `5`, expected string or map"},
		{`"networkProxy":{"proxy":{` + netProxyOK + `,"unixSockets":{"/a":1.5}}}`, "invalid type: floating point `1.5`, expected string or map"},
		{`"networkProxy":{"proxy":{` + netProxyOK + `},"policyDecisionTimeoutMs":-1}`, "invalid number"},
		{`"networkProxy":{"proxy":{` + netProxyOK + `},"policyDecisionTimeoutMs":1.5}`, "invalid number"},
		{`"networkProxy":{"proxy":{` + netProxyOK + `},"policyDecisionTimeoutMs":18446744073709551616}`, "invalid number"},
		{`"networkProxy":{"proxy":{` + netProxyOK + `},"policyDecisionTimeoutMs":"5"}`, `invalid type: string "5", expected u64`},
		{`"networkProxy":{"policyDecisionTimeoutMs":-1,"proxy":{}}`, "invalid number"},
		{`"networkProxy":{"proxy":{` + netProxyOK + `},"executionId":5}`, "invalid type: number, expected a string"},
		{`"networkProxy":{"proxy":{` + netProxyOK + `},"auditMetadata":5}`, "invalid type: number, expected struct NetworkProxyAuditMetadata"},
		{`"networkProxy":{"proxy":{` + netProxyOK + `},"auditMetadata":null}`, "invalid type: null, expected struct NetworkProxyAuditMetadata"},
		{`"networkProxy":{"proxy":{` + netProxyOK + `},"auditMetadata":[]}`, "invalid length 0, expected struct NetworkProxyAuditMetadata with 9 elements"},
		{`"enforceManagedNetwork":"yes"`, `invalid type: string "yes", expected a boolean`},
		{`"enforceManagedNetwork":null`, "invalid type: null, expected a boolean"},
		{`"enforceManagedNetwork":1`, "invalid type: number, expected a boolean"},
		// The networkProxy member comes first here: its error is the one
		// reported, as the reference checks members in document order.
		{`"networkProxy":{"proxy":{"enabled":"x"}},"extra":1`, `invalid type: string "x", expected a boolean`},
	}
	for _, ws := range []bool{false, true} {
		c := cxConfigured(t, ws, t.TempDir(), t.TempDir())
		for i, tc := range cases {
			raw := json.RawMessage(`{` + tc.members + `,"processId":"np` + string(rune('a'+i%26)) + `","argv":["true"],"cwd":"file:///tmp","env":{},"tty":false}`)
			if got, want := errorOf(c.call("process/start", raw)), "-32602 "+tc.want; got != want {
				t.Errorf("ws %v, %s:\n got %s\nwant %s", ws, tc.members, got, want)
			}
		}
	}
}

// TestNetworkMethodsNotServedToServer: network/policyRequest and
// network/policyDecision go from the server to the client; sent to the
// server they are unknown methods, with the reference's answers (recorded
// from 0.169.0). As notifications they are unexpected notifications like
// any other (docs/protocol.md §4).
func TestNetworkMethodsNotServedToServer(t *testing.T) {
	c := cxConfigured(t, false, t.TempDir(), t.TempDir())
	for _, m := range []string{"network/policyRequest", "network/policyDecision"} {
		want := "-32601 exec-server stub does not implement `" + m + "` yet"
		if got := errorOf(c.call(m, map[string]any{"processId": "x", "request": map[string]any{"protocol": "http", "host": "a", "port": 80}})); got != want {
			t.Errorf("%s:\n got %s\nwant %s", m, got, want)
		}
	}
}

// TestNetworkReviewShapesMatchSchema: the review traffic the reference
// 0.169.0 sent (recorded 2026-11-29: process/start with networkProxy and
// policyDecisionTimeoutMs, curl through its proxy to a loopback server)
// validates against schema/, and so do the client's two answers; the
// answers the server treats as malformed do not.
func TestNetworkReviewShapesMatchSchema(t *testing.T) {
	for _, tc := range []struct {
		method, suffix, msg string
		valid               bool
	}{
		{"network/policyRequest", ".params.json", `{"processId":"np1","request":{"protocol":"http","host":"localhost","port":18765}}`, true},
		{"network/policyDecision", ".notification.json", `{"processId":"np1","timestamp":"2026-11-29T04:47:53.983Z","scope":"domain","decision":"allow","source":"baseline_policy","reason":"allow","protocol":"http","host":"127.0.0.1","port":18765,"method":"GET","client":"127.0.0.1:41272","policyOverride":false}`, true},
		{"network/policyDecision", ".notification.json", `{"processId":"np1","timestamp":"2026-11-29T04:47:54.166Z","scope":"domain","decision":"allow","source":"baseline_policy","reason":"allow","protocol":"socks5_tcp","host":"127.0.0.1","port":18765,"client":"127.0.0.1:44950","policyOverride":false}`, true},
		{"network/policyDecision", ".notification.json", `{"processId":"np1","timestamp":"2026-11-29T04:48:05.765Z","scope":"domain","decision":"deny","source":"decider","reason":"not_allowed","protocol":"http","host":"localhost","port":18765,"method":"GET","client":"127.0.0.1:38150","policyOverride":false}`, true},
		{"network/policyRequest", ".result.json", `{"decision":{"type":"allow"}}`, true},
		{"network/policyRequest", ".result.json", `{"decision":{"type":"deny"}}`, true},
		{"network/policyRequest", ".result.json", `{}`, false},
		{"network/policyRequest", ".result.json", `{"decision":"allow"}`, false},
		{"network/policyRequest", ".result.json", `{"decision":{"type":"maybe"}}`, false},
	} {
		s := compiledSchema(t, tc.method, tc.suffix)
		if s == nil {
			t.Fatalf("no schema %s%s", tc.method, tc.suffix)
		}
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(tc.msg))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(v); (err == nil) != tc.valid {
			t.Errorf("%s%s %s: valid %v, want %v (%v)", tc.method, tc.suffix, tc.msg, err == nil, tc.valid, err)
		}
	}
}
