package metrics

import (
	"errors"
	"net"
	"net/http"
	"time"
)

// Server serves the metrics over HTTP on /metrics until Close.
type Server struct {
	ln   net.Listener
	srv  *http.Server
	done chan struct{}
}

// Listen binds addr (HOST:PORT; port 0 for an ephemeral one) and serves
// m on /metrics, 404 elsewhere, on a goroutine that Close stops and waits
// for. wrap, when not nil, wraps the whole handler (the server's peer
// check: docs/operations.md §10).
func (m *Metrics) Listen(addr string, wrap func(http.Handler) http.Handler) (*Server, error) {
	if m == nil {
		return nil, errors.New("metrics: Listen on nil Metrics")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	var h http.Handler = mux
	if wrap != nil {
		h = wrap(mux)
	}
	s := &Server{ln: ln, srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: idleTimeout}, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

// idleTimeout closes a kept-alive connection that sends no request for
// that long: without it, anyone who may connect could hold connections
// open for good (a scraper reconnects at its next scrape).
var idleTimeout = 30 * time.Second

// Addr returns the bound address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close stops the listener and every connection, and waits for the
// serving goroutine.
func (s *Server) Close() error {
	err := s.srv.Close()
	<-s.done
	return err
}
