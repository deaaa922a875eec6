package shelltool

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/codexec/codex/netproxy"
	"github.com/codexec/codex/sandbox"
	"github.com/codexec/codex/shelltool/escalate"
)

// TestNetworkProxyApply: with the rule (config.toml's network_proxy
// feature), a state whose network is on runs behind the rule's proxy
// unless it is of the full-access kind; a state whose network is off, and
// any state without the rule, are left as they are (docs/shell-tool.md
// §3.6).
func TestNetworkProxyApply(t *testing.T) {
	n, err := NewNetworkProxy(netproxy.Settings{Mode: netproxy.ModeFull, EnableSOCKS5: true,
		Domains: map[string]netproxy.Action{"api.example.com": netproxy.Allow}}, "default_permissions net")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewNetworkProxy(netproxy.Settings{Mode: netproxy.ModeFull, Domains: map[string]netproxy.Action{"**": netproxy.Allow}}, "x"); err == nil {
		t.Error("settings that do not compile were accepted")
	}
	legacy, err := parseUpdate(json.RawMessage(`{"sandboxPolicy":{"type":"workspace-write","network_access":true},"sandboxCwd":"/tmp"}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		profile sandbox.Profile
		proxied bool
	}{
		{"read-only with network", sandbox.ReadOnly(true), true},
		{"legacy workspace-write with network_access", legacy.profile, true},
		{"read-only without network", sandbox.ReadOnly(false), false},
		{"danger-full-access", sandbox.DangerFullAccess(), false},
		{"disabled", sandbox.Profile{Type: sandbox.ProfileDisabled}, false},
		{"external", sandbox.ExternalSandbox(true), false},
	} {
		st, pol := n.apply(sandboxState{profile: tc.profile}, zap.NewNop())
		if got := st.profile.Proxied(); got != tc.proxied || (pol != nil) != tc.proxied {
			t.Errorf("%s: proxied %v, policy %v; want %v", tc.name, got, pol != nil, tc.proxied)
		}
		if tc.profile.Proxy != nil {
			t.Errorf("%s: the caller's profile was changed", tc.name)
		}
		var none *NetworkProxy
		if st, pol := none.apply(sandboxState{profile: tc.profile}, zap.NewNop()); st.profile.Proxy != nil || pol != nil {
			t.Errorf("%s: narrowed without the rule", tc.name)
		}
		if !tc.proxied {
			continue
		}
		dir := t.TempDir()
		plan, err := st.plan(dir, nil)
		if err != nil || plan == nil || plan.Proxy == nil {
			t.Errorf("%s: plan %+v, %v; want a proxied plan", tc.name, plan, err)
		}
	}
	deny := DenyAllProxy("the default profile has no proxied network")
	st, pol := deny.apply(sandboxState{profile: sandbox.ReadOnly(true)}, zap.NewNop())
	if pol == nil || st.profile.Proxy == nil || len(st.profile.Proxy.Domains) != 0 {
		t.Errorf("deny-all rule: %+v", st.profile.Proxy)
	}
}

// TestTracedRunProxied: a proxied call gets its proxy, served by the
// runner until the call ends: the deny-all proxy refuses a host with 403
// (no traffic leaves: the host is refused before any lookup). A proxied
// plan without a policy is refused (fail closed), and its control socket
// is closed all the same.
func TestTracedRunProxied(t *testing.T) {
	if err := sandbox.Available(); err != nil {
		t.Skipf("sandbox not available: %v", err)
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	dir := canonical(t, t.TempDir())
	st, pol := DenyAllProxy("test").apply(sandboxState{profile: sandbox.ReadOnly(true), cwd: dir}, zap.NewNop())
	plan, err := st.plan(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &TracedRunner{Bash: DefaultTracedBash, Env: []string{"PATH=/usr/bin:/bin", "LC_ALL=C"}}
	run := func(network *netproxy.Policy) (Result, error) {
		expired := make(chan struct{})
		c := &Call{Command: `echo "active=$CODEX_NETWORK_PROXY_ACTIVE"; curl -s --max-time 5 -o /dev/null -w '%{http_code}\n' http://blocked.example/`,
			Workdir: dir, Plan: plan, Decider: &recordingDecider{action: escalate.Run}, Expired: expired, Network: network,
			Stopwatch: NewStopwatch(nil, 20*time.Second, func() { close(expired) })}
		return r.Run(context.Background(), c)
	}
	res, err := run(pol)
	if err != nil || res.ExitCode != 0 || res.Output != "active=1\n403\n" {
		t.Fatalf("%+v %v", res, err)
	}
	if _, err := run(nil); err == nil || !strings.Contains(err.Error(), "no proxy policy") {
		t.Fatalf("a proxied plan without a policy: %v", err)
	}
}
