package execserver

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/codexec/codex/internal/zapslog"
	"github.com/codexec/codex/netproxy"
	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/sandbox"
	"github.com/codexec/codex/wire"
	"go.uber.org/zap"
)

// The managed network proxy of a command (docs/sandbox.md §9): the
// sandbox helper opens the proxy's listeners inside the command's own
// network namespace and hands them over (sandbox.Launcher.ProxyListeners);
// the proxy (package netproxy) serves them from the server's network until
// the command is closed.

// proxyListenTimeout bounds the wait for the helper's listeners. The
// helper sends them within milliseconds of its start, before it execs the
// command; one that dies first closes the socket and ends the wait at once.
const proxyListenTimeout = 10 * time.Second

// proxySettings converts process/start's networkProxy.proxy.
func proxySettings(c *wire.ProxyConfig) netproxy.Settings {
	s := netproxy.Settings{
		Mode:                           netproxy.ModeFull,
		AllowLocalBinding:              c.AllowLocalBinding,
		EnableSOCKS5:                   c.EnableSocks5,
		EnableSOCKS5UDP:                c.EnableSocks5UDP,
		AllowUpstreamProxy:             c.AllowUpstreamProxy,
		DangerouslyAllowAllUnixSockets: c.DangerouslyAllowAllUnixSockets,
	}
	if c.Mode == wire.ProxyModeLimited {
		s.Mode = netproxy.ModeLimited
	}
	for pattern, v := range c.Domains {
		switch v {
		case wire.PermissionAllow, wire.PermissionDeny:
			if s.Domains == nil {
				s.Domains = map[string]netproxy.Action{}
			}
			s.Domains[pattern] = netproxy.Action(v)
		}
	}
	for path, v := range c.UnixSockets {
		if s.UnixSockets == nil {
			s.UnixSockets = map[string]netproxy.Action{}
		}
		s.UnixSockets[path] = netproxy.Action(v)
	}
	return s
}

// startNetworkProxy checks process/start's networkProxy and returns its
// settings and compiled policy, or the reference's invalid-params answer.
//
// enableSocks5Udp and allowUpstreamProxy are accepted and not served: the
// Codex CLI sends both true by default, and neither widens what the
// command reaches (a UDP associate is refused with SOCKS5 reply 7; allowed
// hosts are dialled directly, never through the server's own proxy).
func startNetworkProxy(np *wire.NetworkProxyParams) (netproxy.Settings, *netproxy.Policy, error) {
	if err := np.Validate(); err != nil {
		return netproxy.Settings{}, nil, err
	}
	s := proxySettings(&np.Proxy)
	pol, err := netproxy.Compile(s)
	if err != nil {
		var se *netproxy.SettingsError
		if errors.As(err, &se) {
			return netproxy.Settings{}, nil, wire.ErrInvalidNetworkProxyConfig(se.Text)
		}
		return netproxy.Settings{}, nil, wire.ErrInvalidNetworkProxyConfig(err.Error())
	}
	return s, pol, nil
}

// commandProxy is the running proxy of one command.
type commandProxy struct {
	p *netproxy.Proxy
}

// close stops the proxy: its listeners, its connections and their
// goroutines. Safe on nil.
func (cp *commandProxy) close() {
	if cp != nil {
		_ = cp.p.Close()
	}
}

// proxyHooks are what a command's proxy tells its server: review is nil
// when the command has no review; decided gets every decision.
type proxyHooks struct {
	review  func(ctx context.Context, r netproxy.Request) bool
	decided func(ev netproxy.Event)
}

// serveProxy receives the listeners of the started command from l and
// serves them with a proxy of pol. It fails when the helper sent none (it
// then refuses to run the command itself). The proxy's upstream
// connections are recorded in ups, which the server's peer check refuses
// (Registry.CheckPeer).
func serveProxy(l *sandbox.Launcher, pol *netproxy.Policy, hooks proxyHooks, ups *netproxy.Upstreams, log *zap.Logger) (*commandProxy, error) {
	ctx, cancel := context.WithTimeout(context.Background(), proxyListenTimeout)
	defer cancel()
	ls, err := l.ProxyListeners(ctx)
	if err != nil {
		return nil, err
	}
	p := netproxy.New(netproxy.Options{Policy: pol, Review: hooks.review, OnDecision: hooks.decided, Logger: zapslog.New(log), Upstreams: ups})
	for _, pl := range ls {
		p.Serve(pl.Route, pl.Listener)
	}
	return &commandProxy{p: p}, nil
}

// reviewer returns the review of a process/start command: each host that
// is only not allowed is put to the session's client as
// network/policyRequest, and refused when the client does not answer
// within timeout, answers with an error or with anything but
// {"decision":{"type":"allow"|"deny"}} (logged). The answer is read by the
// connection's reader, never behind a parked request (docs/protocol.md
// §6.17).
func (s *Session) reviewer(processID string, timeout time.Duration) func(ctx context.Context, r netproxy.Request) bool {
	return func(ctx context.Context, r netproxy.Request) bool {
		log := s.log.With(zap.String("processId", processID), zap.String("host", r.Host), zap.Int("port", r.Port), zap.String("protocol", r.Protocol))
		c := s.conn()
		if c == nil {
			log.Info("network review refused: no client attached")
			return false
		}
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		var raw json.RawMessage
		params := wire.NetworkPolicyRequestParams{ProcessID: processID,
			Request: wire.NetworkPolicyQuery{Protocol: r.Protocol, Host: r.Host, Port: uint16(r.Port)}}
		if err := c.Call(ctx, wire.MethodNetworkPolicyRequest, params, &raw); err != nil {
			if ctx.Err() != nil {
				log.Info("network review refused: no answer in time", zap.Duration("timeout", timeout))
			} else {
				log.Warn("network review refused: the client answered with an error", zap.Error(err))
			}
			return false
		}
		allow, err := wire.DecodeNetworkPolicyResult(raw)
		if err != nil {
			log.Warn("network review refused: malformed answer", zap.Error(err))
		}
		return allow
	}
}

// decisionNotifier returns the hook that counts every decision of a
// process/start command's proxy and sends it to the session's client as
// network/policyDecision.
func (s *Session) decisionNotifier(processID string) func(ev netproxy.Event) {
	return func(ev netproxy.Event) {
		s.reg.cfg.Metrics.ProxyDecision(ev.Allowed, ev.Reason, ev.Source)
		c := s.conn()
		if c == nil {
			return
		}
		p := wire.NetworkPolicyDecisionParams{
			ProcessID: processID, Timestamp: ev.Time.UTC().Format("2006-01-02T15:04:05.000Z"), Scope: "domain",
			Decision: "deny", Source: ev.Source, Reason: ev.Reason, Protocol: ev.Protocol, Host: ev.Host, Port: uint16(ev.Port),
			Method: ev.Method, Client: ev.Client, PolicyOverride: ev.PolicyOverride,
		}
		if ev.Allowed {
			p.Decision = "allow"
		}
		_ = c.Send(s.sends, wire.AppendNetworkPolicyDecision(rpc.AcquireFrame(), &p), true)
	}
}
