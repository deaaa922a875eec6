package sandbox_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/codexec/codex/netproxy"
	"github.com/codexec/codex/sandbox"
)

// TestResolveProxied: a profile whose network is on and Proxy set is
// proxied whatever its type (docs/sandbox.md §4.9): a network namespace,
// the proxied filter (proxiedUnix with every Unix socket allowed), the
// routes, no network-disabled marker; a profile whose network is off, and
// the fs helper, ignore the proxy.
func TestResolveProxied(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	ctx := sandbox.Context{Cwd: dir, Euid: 0}
	socks := &netproxy.Settings{EnableSOCKS5: true, AllowLocalBinding: true}
	httpOnly := &netproxy.Settings{DangerouslyAllowAllUnixSockets: true, UnixSockets: map[string]netproxy.Action{"/run/a.sock": netproxy.Allow}}
	with := func(p sandbox.Profile, s *netproxy.Settings) sandbox.Profile { p.Proxy = s; return p }
	for _, tc := range []struct {
		name    string
		p       sandbox.Profile
		purpose sandbox.Purpose
		seccomp sandbox.SeccompMode
		routes  []string
	}{
		{"workspace-write", with(sandbox.WorkspaceWrite(nil, true, true, true), socks), sandbox.PurposeProcess, sandbox.SeccompProxied, []string{"http", "socks5"}},
		{"read-only, all unix sockets", with(sandbox.ReadOnly(true), httpOnly), sandbox.PurposeProcess, sandbox.SeccompProxiedUnix, []string{"http"}},
		{"danger-full-access", with(sandbox.DangerFullAccess(), socks), sandbox.PurposeProcess, sandbox.SeccompProxied, []string{"http", "socks5"}},
		{"disabled", with(sandbox.Profile{Type: sandbox.ProfileDisabled}, socks), sandbox.PurposeProcess, sandbox.SeccompProxied, []string{"http", "socks5"}},
		{"external, network on", with(sandbox.ExternalSandbox(true), socks), sandbox.PurposeProcess, sandbox.SeccompProxied, []string{"http", "socks5"}},
		{"read-only, network off", with(sandbox.ReadOnly(false), socks), sandbox.PurposeProcess, sandbox.SeccompRestricted, nil},
		{"fs helper", with(sandbox.ReadOnly(true), socks), sandbox.PurposeFSHelper, sandbox.SeccompRestricted, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !sandbox.ProcessNeedsHelper(tc.p) {
				t.Error("ProcessNeedsHelper = false")
			}
			plan, err := sandbox.Resolve(tc.p, ctx, tc.purpose)
			if err != nil {
				t.Fatal(err)
			}
			if plan.Seccomp != tc.seccomp || !plan.NewNetNS || !plan.NewMountNS || !plan.NewPIDNS || !plan.Enforces() {
				t.Errorf("plan: seccomp %q netns %v mnt %v pid %v", plan.Seccomp, plan.NewNetNS, plan.NewMountNS, plan.NewPIDNS)
			}
			if tc.routes == nil {
				if plan.Proxy != nil || !plan.NetworkDisabled {
					t.Errorf("network off: proxy %+v, disabled %v", plan.Proxy, plan.NetworkDisabled)
				}
				return
			}
			if plan.Proxy == nil || !slices.Equal(plan.Proxy.Routes, tc.routes) || plan.NetworkDisabled || plan.ProxyFD != 0 {
				t.Fatalf("proxy %+v, disabled %v, fd %d", plan.Proxy, plan.NetworkDisabled, plan.ProxyFD)
			}
			if plan.Proxy.AllowLocalBinding != tc.p.Proxy.AllowLocalBinding {
				t.Errorf("allowLocalBinding %v", plan.Proxy.AllowLocalBinding)
			}
		})
	}
}

// TestResolveProxiedUnixAllowList: a Unix socket allowed by path is
// refused (the reference accepts it and enforces nothing on Linux),
// unless every Unix socket is allowed; deny entries are the default.
func TestResolveProxiedUnixAllowList(t *testing.T) {
	t.Parallel()
	ctx := sandbox.Context{Cwd: tempDir(t), Euid: 0}
	p := sandbox.ReadOnly(true)
	p.Proxy = &netproxy.Settings{UnixSockets: map[string]netproxy.Action{"/run/b.sock": netproxy.Allow, "/run/a.sock": netproxy.Allow, "/run/c.sock": netproxy.Deny}}
	_, err := sandbox.Resolve(p, ctx, sandbox.PurposeProcess)
	want := `network proxy: allowing the Unix socket "/run/a.sock" by path cannot be enforced on this executor; remove the entry, or allow every Unix socket (dangerously_allow_all_unix_sockets)`
	if err == nil || err.Error() != want || !errors.Is(err, sandbox.ErrInvalidPolicy) {
		t.Errorf("allow entry: %v", err)
	}
	if _, err := sandbox.Prepare(&sandbox.Sandbox{Permissions: p}, sandbox.Request{Cwd: ctx.Cwd}); err == nil || !strings.Contains(err.Error(), "/run/a.sock") {
		t.Errorf("Prepare: %v", err)
	}
	p.Proxy = &netproxy.Settings{UnixSockets: map[string]netproxy.Action{"/run/c.sock": netproxy.Deny}}
	if _, err := sandbox.Resolve(p, ctx, sandbox.PurposeProcess); err != nil {
		t.Errorf("deny entry: %v", err)
	}
	// With the network off nothing gets out: the entry is moot.
	off := sandbox.ReadOnly(false)
	off.Proxy = &netproxy.Settings{UnixSockets: map[string]netproxy.Action{"/run/a.sock": netproxy.Allow}}
	if _, err := sandbox.Resolve(off, ctx, sandbox.PurposeProcess); err != nil {
		t.Errorf("network off: %v", err)
	}
}
