package wsserve

import (
	"fmt"
	"net/http"

	"go.uber.org/zap"
)

// The connection limit of a WebSocketServer and what it tells its
// observer (docs/operations.md §1, §8).

// ConnObserver is told about the WebSocket connections of a server: the
// exec-server's metrics. Its methods must be safe for concurrent use.
type ConnObserver interface {
	// ConnOpened is a connection upgraded; ConnClosed is its end.
	ConnOpened()
	ConnClosed()
	// ConnRefused is an upgrade refused for reason: RefusedLimit,
	// RefusedAuth, RefusedPeer or RefusedShutdown.
	ConnRefused(reason string)
}

// The reasons of ConnObserver.ConnRefused.
const (
	RefusedLimit    = "limit"    // MaxConnections open: 503
	RefusedAuth     = "auth"     // a missing or wrong bearer token: 401
	RefusedPeer     = "peer"     // the peer check refused it: 403
	RefusedShutdown = "shutdown" // the server is shutting down: 503
)

// RefusedReasons lists every reason, for observers that pre-create them.
var RefusedReasons = []string{RefusedLimit, RefusedAuth, RefusedPeer, RefusedShutdown}

// nopObserver observes nothing.
type nopObserver struct{}

func (nopObserver) ConnOpened()        {}
func (nopObserver) ConnClosed()        {}
func (nopObserver) ConnRefused(string) {}

func (s *WebSocketServer) observer() ConnObserver {
	if s.Observer == nil {
		return nopObserver{}
	}
	return s.Observer
}

// reserve takes a place for a connection about to be upgraded, or reports
// false at MaxConnections. s.mu must be held. A successful reserve is
// followed by unreserve.
func (s *WebSocketServer) reserve() bool {
	if s.MaxConnections > 0 && s.open >= s.MaxConnections {
		return false
	}
	s.open++
	return true
}

// unreserve gives the place back.
func (s *WebSocketServer) unreserve() {
	s.mu.Lock()
	s.open--
	s.mu.Unlock()
}

// refuseLimit answers 503: the server holds MaxConnections connections.
func (s *WebSocketServer) refuseLimit(w http.ResponseWriter, r *http.Request) {
	s.Logger.Info("connection refused: limit reached", zap.String("peer", r.RemoteAddr), zap.Int("max_connections", s.MaxConnections))
	s.observer().ConnRefused(RefusedLimit)
	w.Header().Set("Retry-After", "1")
	plainError(w, http.StatusServiceUnavailable,
		fmt.Sprintf("server at its connection limit (%d connections); try another server or later", s.MaxConnections))
}
