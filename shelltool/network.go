package shelltool

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/codexec/codex/internal/zapslog"
	"github.com/codexec/codex/netproxy"
	"github.com/codexec/codex/sandbox"
)

// proxyListenTimeout bounds the wait for the listeners the sandbox helper
// opens in a proxied call's network namespace; it sends them within
// milliseconds of its start, and one that dies first ends the wait at once.
const proxyListenTimeout = 10 * time.Second

// NetworkProxy is the server's rule for a call whose sandbox state enables
// the network (docs/shell-tool.md §3.6): with config.toml's network_proxy
// feature on, such a call runs behind a proxy of these settings, unless
// its state is of the full-access kind (disabled, external, or a managed
// profile with an unrestricted file system), which keeps the whole
// network. A nil *NetworkProxy (the feature off) changes nothing.
type NetworkProxy struct {
	settings netproxy.Settings
	policy   *netproxy.Policy
	source   string
}

// NewNetworkProxy compiles s; source says where the settings come from, in
// the logs of each call.
func NewNetworkProxy(s netproxy.Settings, source string) (*NetworkProxy, error) {
	pol, err := netproxy.Compile(s)
	if err != nil {
		return nil, err
	}
	return &NetworkProxy{settings: s, policy: pol, source: source}, nil
}

// DenyAllProxy is the proxy of a call whose domains the server cannot know:
// one that allows nothing.
func DenyAllProxy(reason string) *NetworkProxy {
	s := netproxy.Settings{Mode: netproxy.ModeFull, EnableSOCKS5: true}
	pol, err := netproxy.Compile(s)
	if err != nil {
		panic("shelltool: the empty proxy settings do not compile: " + err.Error())
	}
	return &NetworkProxy{settings: s, policy: pol, source: reason}
}

// Source is where the rule's settings come from.
func (n *NetworkProxy) Source() string { return n.source }

// fullAccess reports whether a state's profile is of the kind that keeps
// the whole network: no file-system sandbox either (disabled, external,
// danger-full-access).
func fullAccess(p sandbox.Profile) bool { return !p.Restricted() }

// apply returns the state with its network narrowed to the proxy when the
// rule applies to it, and the policy the call's proxy serves (nil when
// it does not), logging the decision.
func (n *NetworkProxy) apply(st sandboxState, log *zap.Logger) (sandboxState, *netproxy.Policy) {
	if n == nil || !st.profile.FullNetwork() {
		return st, nil
	}
	if fullAccess(st.profile) {
		log.Info("shell call: the whole network (a full-access sandbox state)", zap.String("profile", string(st.profile.Type)))
		return st, nil
	}
	s := n.settings
	st.profile.Proxy = &s
	log.Info("shell call: network through a proxy", zap.String("settings", n.source))
	return st, n.policy
}

// serveCallProxy serves the proxy of a started (or failed to start)
// proxied call: it receives the listeners the helper opened inside the
// call's network namespace and serves them with pol. It returns nil, nil
// for a call without a proxy. Call it once, after the start and after
// w's ExtraFiles are closed, whether the start succeeded or not: it closes
// the control socket on every path. An error means the call cannot have
// its proxy (the helper then refuses to run the command).
func serveCallProxy(ctx context.Context, w *sandbox.WrappedCommand, c *Call, log *zap.Logger) (*netproxy.Proxy, error) {
	if c.Plan == nil || c.Plan.Proxy == nil || w == nil {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, proxyListenTimeout)
	defer cancel()
	ls, err := w.ProxyListeners(ctx)
	if err != nil {
		return nil, fmt.Errorf("network proxy: %w", err)
	}
	if c.Network == nil {
		for _, l := range ls {
			_ = l.Listener.Close()
		}
		return nil, errors.New("network proxy: the call has no proxy policy")
	}
	p := netproxy.New(netproxy.Options{Policy: c.Network, Logger: zapslog.New(log)})
	for _, l := range ls {
		p.Serve(l.Route, l.Listener)
	}
	return p, nil
}

// dropCallProxy closes the proxy control socket of w when serveCallProxy
// was not reached (an error before the start); after it, it does nothing.
func dropCallProxy(w *sandbox.WrappedCommand) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _ = w.ProxyListeners(ctx)
}
