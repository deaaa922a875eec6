package metrics

import (
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// The metrics an operator of many servers scales and routes on
// (docs/operations.md §8, §11): connections, sessions by state, and the
// build each server runs.

// The states of the sessions gauge.
const (
	stateAttached = "attached"
	stateDetached = "detached"
)

// refusedReasons are the reasons of connections_refused_total, created at
// zero (rpc's RefusedLimit, RefusedAuth, RefusedPeer, RefusedShutdown).
var refusedReasons = []string{"limit", "auth", "peer", "shutdown"}

// newFleet makes the fleet metrics; New registers them.
func (m *Metrics) newFleet() {
	m.connsOpen = gauge("connections_open", "Connections open: WebSocket connections upgraded and not yet closed, or the stdio connection.")
	m.connsTotal = counter("connections_total", "Connections opened since the start.")
	m.connsRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "connections_refused_total",
		Help: "WebSocket upgrades refused, by reason: limit (--max-connections, 503), auth (401), peer (the peer check, 403), shutdown (503).",
	}, []string{"reason"})
	for _, r := range refusedReasons {
		m.connsRefused.WithLabelValues(r)
	}
	m.sessions = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "sessions",
		Help: "Sessions held by the server, by state: attached to a connection, or detached and waiting for a resume until their TTL.",
	}, []string{"state"})
	m.sessions.WithLabelValues(stateAttached)
	m.sessions.WithLabelValues(stateDetached)
	m.sessionsRefused = counter("sessions_refused_total", "initialize requests for a new session refused at --max-sessions (-32011).")
	m.buildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "codex_build_info",
		Help: "Always 1; the labels say which build of codex serves: its version, the exec-server protocol version it speaks, the Go version and the VCS revision it was built with.",
	}, []string{"version", "protocol", "goversion", "revision"})
}

// SetBuild sets codex_build_info for version (the binary's) and protocol
// (the Codex CLI release whose exec-server protocol it speaks); the Go
// version and the VCS revision come from the binary ("unknown" when it
// was built without VCS stamping).
func (m *Metrics) SetBuild(version, protocol string) {
	if m == nil {
		return
	}
	rev := "unknown"
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && s.Value != "" {
				rev = s.Value
			}
		}
	}
	m.buildInfo.Reset()
	m.buildInfo.WithLabelValues(version, protocol, runtime.Version(), rev).Set(1)
}

// ConnOpened records a connection that opened.
func (m *Metrics) ConnOpened() {
	if m == nil {
		return
	}
	m.connsOpen.Inc()
	m.connsTotal.Inc()
}

// ConnClosed records the end of a connection counted by ConnOpened.
func (m *Metrics) ConnClosed() {
	if m == nil {
		return
	}
	m.connsOpen.Dec()
}

// SessionRefused records a new session refused at the session limit.
func (m *Metrics) SessionRefused() {
	if m == nil {
		return
	}
	m.sessionsRefused.Inc()
}

// ConnRefused records an upgrade refused for reason.
func (m *Metrics) ConnRefused(reason string) {
	if m == nil {
		return
	}
	m.connsRefused.WithLabelValues(reason).Inc()
}
