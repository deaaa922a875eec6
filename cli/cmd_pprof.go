package cli

import (
	"errors"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"time"

	"github.com/codexec/codex/wsserve"
	"github.com/urfave/cli/v2"
	"go.uber.org/zap"
)

// pprofFlag is the hidden --debug-pprof flag: a loopback IP:PORT on which
// the server serves net/http/pprof (heap, goroutine, profile ...), for
// investigating memory and goroutine growth: a debugging aid, off by
// default, never on a non-loopback address, and behind the peer check
// (docs/operations.md §10).
var pprofFlag = &cli.StringFlag{Name: "debug-pprof", Hidden: true, Usage: "serve net/http/pprof on this loopback `IP:PORT` (debugging)"}

// startPprof serves the profiles on addr to the peers gate allows. It
// returns a function that stops the listener and waits for it. An empty
// addr does nothing.
func startPprof(addr string, gate *wsserve.PeerGate, logger *zap.Logger) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().IsLoopback() {
		return nil, errors.New("--debug-pprof needs a loopback IP:PORT")
	}
	ln, err := net.Listen("tcp", ap.String())
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: gate.Guard("pprof", logger, mux), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	logger.Warn("serving pprof (debugging only)", zap.String("addr", ln.Addr().String()))
	return func() {
		_ = srv.Close()
		<-done
	}, nil
}
