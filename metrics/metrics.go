// Package metrics holds the exec-server's Prometheus metrics and serves
// them in the text exposition format on /metrics.
//
// A nil *Metrics is valid and records nothing, so the server packages call
// its methods unconditionally and tests or library users need no setup.
// The package depends on none of ours: the server reports events to it,
// never the other way.
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// namespace prefixes every metric of ours.
const namespace = "codex_exec_server"

// Metrics is the set of exec-server metrics, registered on a registry of
// its own (with the Go runtime and process collectors). Its methods are
// safe for concurrent use and do nothing on a nil receiver.
type Metrics struct {
	reg *prometheus.Registry

	processesLive    prometheus.Gauge
	processesTotal   prometheus.Counter
	startFailures    prometheus.Counter
	startLatency     prometheus.Histogram
	outputBytes      prometheus.Counter
	sandboxDenials   prometheus.Counter
	sessionsLive     prometheus.Gauge
	sessionsDetached prometheus.Gauge
	sessionsResumed  prometheus.Counter
	authFailures     prometheus.Counter

	// fleet.go: connections, sessions by state, the build.
	connsOpen    prometheus.Gauge
	connsTotal   prometheus.Counter
	connsRefused *prometheus.CounterVec
	sessions     *prometheus.GaugeVec
	buildInfo    *prometheus.GaugeVec

	sessionsRefused prometheus.Counter

	proxyDecisions *prometheus.CounterVec
}

// New returns the metrics, registered with the Go runtime and process
// collectors on a new registry.
func New() *Metrics {
	m := &Metrics{
		reg:              prometheus.NewRegistry(),
		processesLive:    gauge("processes_live", "Processes started with process/start or command/exec and not yet ended."),
		processesTotal:   counter("processes_started_total", "Processes started with process/start or command/exec."),
		startFailures:    counter("process_start_failures_total", "process/start and command/exec requests answered with an error after the handshake (bad params, sandbox plan, limits, spawn)."),
		outputBytes:      counter("output_bytes_total", "Bytes of stdout and stderr (or PTY output) read from processes."),
		sandboxDenials:   counter("sandbox_denials_total", "Sandboxed process/start processes whose exit was judged a sandbox denial (command/exec reports none)."),
		sessionsLive:     gauge("sessions_live", "Sessions held by the server, attached or detached."),
		sessionsDetached: gauge("sessions_detached", "Sessions without a connection, waiting for a resume until their TTL."),
		sessionsResumed:  counter("sessions_resumed_total", "Sessions resumed by a new connection."),
		authFailures:     counter("auth_failures_total", "WebSocket upgrades refused with 401 for a missing or wrong bearer token."),
		startLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace,
			Name:      "process_start_seconds",
			Help:      "Time from a process/start or command/exec request to the running process (sandbox plan, spawn).",
			Buckets:   prometheus.ExponentialBuckets(0.0005, 2, 14), // 0.5 ms to ~4 s
		}),
	}
	m.newFleet()
	m.proxyDecisions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "network_proxy_decisions_total",
		Help:      "Connections judged by the managed network proxies of commands, by decision (allow, deny), reason (allow, not_allowed, denied, not_allowed_local, method_not_allowed) and source (baseline_policy, mode_guard, decider).",
	}, []string{"decision", "reason", "source"})
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.processesLive, m.processesTotal, m.startFailures, m.startLatency, m.outputBytes,
		m.sandboxDenials, m.sessionsLive, m.sessionsDetached, m.sessionsResumed, m.authFailures,
		m.connsOpen, m.connsTotal, m.connsRefused, m.sessions, m.buildInfo, m.sessionsRefused,
		m.proxyDecisions,
	)
	return m
}

func gauge(name, help string) prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help})
}

func counter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help})
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// ProcessStarted records a process that runs, spawned after latency.
func (m *Metrics) ProcessStarted(latency time.Duration) {
	if m == nil {
		return
	}
	m.processesTotal.Inc()
	m.processesLive.Inc()
	m.startLatency.Observe(latency.Seconds())
}

// ProcessClosed records the close of a process counted by ProcessStarted.
func (m *Metrics) ProcessClosed() {
	if m == nil {
		return
	}
	m.processesLive.Dec()
}

// StartFailed records a process/start or command/exec answered with an error.
func (m *Metrics) StartFailed() {
	if m == nil {
		return
	}
	m.startFailures.Inc()
}

// Output records n bytes of process output.
func (m *Metrics) Output(n int) {
	if m == nil {
		return
	}
	m.outputBytes.Add(float64(n))
}

// ProxyDecision records one decision of a command's network proxy.
func (m *Metrics) ProxyDecision(allowed bool, reason, source string) {
	if m == nil {
		return
	}
	decision := "deny"
	if allowed {
		decision = "allow"
	}
	m.proxyDecisions.WithLabelValues(decision, reason, source).Inc()
}

// SandboxDenied records an exit judged a sandbox denial.
func (m *Metrics) SandboxDenied() {
	if m == nil {
		return
	}
	m.sandboxDenials.Inc()
}

// SessionCreated records a new, attached session.
func (m *Metrics) SessionCreated() {
	if m == nil {
		return
	}
	m.sessionsLive.Inc()
	m.sessions.WithLabelValues(stateAttached).Inc()
}

// SessionDetached records a session that lost its connection and waits
// for a resume.
func (m *Metrics) SessionDetached() {
	if m == nil {
		return
	}
	m.sessionsDetached.Inc()
	m.sessions.WithLabelValues(stateAttached).Dec()
	m.sessions.WithLabelValues(stateDetached).Inc()
}

// SessionResumed records a detached session attached again.
func (m *Metrics) SessionResumed() {
	if m == nil {
		return
	}
	m.sessionsDetached.Dec()
	m.sessionsResumed.Inc()
	m.sessions.WithLabelValues(stateDetached).Dec()
	m.sessions.WithLabelValues(stateAttached).Inc()
}

// SessionEnded records the end of a session; detached tells whether it was
// counted by SessionDetached (expired, or detached at shutdown).
func (m *Metrics) SessionEnded(detached bool) {
	if m == nil {
		return
	}
	m.sessionsLive.Dec()
	state := stateAttached
	if detached {
		m.sessionsDetached.Dec()
		state = stateDetached
	}
	m.sessions.WithLabelValues(state).Dec()
}

// AuthFailed records a WebSocket upgrade refused for its bearer token.
func (m *Metrics) AuthFailed() {
	if m == nil {
		return
	}
	m.authFailures.Inc()
}
