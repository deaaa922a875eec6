package cli

import (
	"fmt"
	"net/http"
	"net/netip"

	"github.com/codexec/codex/execserver"
	"github.com/codexec/codex/metrics"
	"go.uber.org/zap"
)

// startMetrics serves the exec-server's metrics on addr (--metrics-listen)
// and records them through cfg; each request passes the peer check of
// cfg.PeerGate first (docs/operations.md §10). It returns the function
// that stops the listener and waits for it, which the caller runs after
// the exec-server returned. An empty addr serves and records nothing.
func startMetrics(addr string, cfg *execserver.Config, logger *zap.Logger) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return nil, fmt.Errorf("invalid --metrics-listen %q: want IP:PORT", addr)
	}
	m := metrics.New()
	m.SetBuild(buildVersion(), protocolVersion)
	guard := func(h http.Handler) http.Handler { return cfg.PeerGate.Guard("metrics", logger, h) }
	srv, err := m.Listen(ap.String(), guard)
	if err != nil {
		return nil, fmt.Errorf("--metrics-listen: %w", err)
	}
	cfg.Sessions.Metrics = m
	logger.Info("serving metrics", zap.String("url", "http://"+srv.Addr().String()+"/metrics"))
	if !ap.Addr().IsLoopback() {
		logger.Warn("metrics are served without authentication on a non-loopback address", zap.String("addr", srv.Addr().String()))
	}
	return func() { _ = srv.Close() }, nil
}
