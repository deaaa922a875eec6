package wsserve

import (
	"errors"
	"net"
	"net/http"
	"net/netip"
	"sync/atomic"

	"go.uber.org/zap"
)

// PeerCheck decides whether the peer of a TCP connection (its local and
// remote addresses) may be served; an error refuses it and says why.
type PeerCheck func(local, remote net.Addr) error

// PeerGate hands a PeerCheck that exists only once the server runs (the
// exec-server's registry makes it) to listeners started before (metrics,
// pprof). Until Set, Check refuses every peer: nothing is served to a peer
// nobody judged. The zero value is ready to use; a nil *PeerGate allows
// every peer.
type PeerGate struct {
	check atomic.Pointer[PeerCheck]
}

// errGateUnset is Check's answer before Set.
var errGateUnset = errors.New("the server is not running: no peer check yet")

// Set installs check.
func (g *PeerGate) Set(check PeerCheck) {
	if g != nil && check != nil {
		g.check.Store(&check)
	}
}

// Check runs the installed check.
func (g *PeerGate) Check(local, remote net.Addr) error {
	if g == nil {
		return nil
	}
	c := g.check.Load()
	if c == nil {
		return errGateUnset
	}
	return (*c)(local, remote)
}

// Guard returns a handler that serves next only to peers g allows: every
// request (keep-alive ones included) is checked on its connection's own
// goroutine, never on the accept path, so a slow check holds up no other
// connection. A refused request gets 403 and a warning "refused <name>
// peer" with the peer and the reason. A nil g serves every peer.
func (g *PeerGate) Guard(name string, logger *zap.Logger, next http.Handler) http.Handler {
	if g == nil {
		return next
	}
	if logger == nil {
		logger = zap.NewNop()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refusePeer(g.Check, name, logger, w, r) {
			return
		}
		next.ServeHTTP(w, r)
	})
}

// refusePeer runs check on r's connection and, if it refuses the peer,
// logs "refused <name> peer", answers 403 and returns true.
func refusePeer(check PeerCheck, name string, logger *zap.Logger, w http.ResponseWriter, r *http.Request) bool {
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	var remote net.Addr
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		remote = net.TCPAddrFromAddrPort(ap)
	}
	if err := check(local, remote); err != nil {
		logger.Warn("refused "+name+" peer", zap.String("peer", r.RemoteAddr), zap.Error(err))
		plainError(w, http.StatusForbidden, "connection refused for this peer")
		return true
	}
	return false
}
