package netproxy

import (
	"net"
	"net/netip"
	"sync"
)

// Upstreams is the set of the live upstream connections of the proxies
// that share it (Options.Upstreams), by their two ends: the connections a
// proxy made on behalf of its command. A server that runs the proxies asks
// it about every connection to its own listeners (Holds): the proxy's upstream socket is the server's own, so the peer
// check, which knows sandboxed commands by the sockets they make, would
// otherwise take a command that asked its proxy for the server's own port
// (a listed 127.0.0.1, a name resolving to loopback with local binding,
// a reviewed host) for the server itself, and serve it.
//
// A connection is added when it is established, before the proxy sends
// anything on it, and removed when the proxy closes it, so a request that
// reached a listener through a proxy always finds it. The zero value is
// ready to use; a nil *Upstreams holds nothing.
type Upstreams struct {
	mu sync.Mutex
	m  map[upstreamEnds]int
}

// upstreamEnds are a connection's ends as the proxy sees them: its own
// (local) and the destination's (remote).
type upstreamEnds struct{ local, remote netip.AddrPort }

// Holds reports whether the TCP connection a listener accepted, between
// local (the listener's end) and remote, is a live upstream connection of
// a proxy sharing u.
func (u *Upstreams) Holds(local, remote net.Addr) bool {
	l, lok := tcpAddrPort(local)
	r, rok := tcpAddrPort(remote)
	if u == nil || !lok || !rok {
		return false
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.m[upstreamEnds{local: r, remote: l}] > 0
}

// add records the ends of c and returns them; ok is false when c has no
// TCP addresses (a test's dialer), which is then not recorded.
func (u *Upstreams) add(c net.Conn) (upstreamEnds, bool) {
	l, lok := tcpAddrPort(c.LocalAddr())
	r, rok := tcpAddrPort(c.RemoteAddr())
	if u == nil || !lok || !rok {
		return upstreamEnds{}, false
	}
	e := upstreamEnds{local: l, remote: r}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.m == nil {
		u.m = map[upstreamEnds]int{}
	}
	u.m[e]++
	return e, true
}

func (u *Upstreams) remove(a upstreamEnds) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.m[a]--; u.m[a] <= 0 {
		delete(u.m, a)
	}
}

// tcpAddrPort is a's address and port with IPv4 unmapped and no zone, so
// that the proxy's view of its socket and a listener's view of its peer
// compare equal.
func tcpAddrPort(a net.Addr) (netip.AddrPort, bool) {
	ta, ok := a.(*net.TCPAddr)
	if !ok || ta == nil {
		return netip.AddrPort{}, false
	}
	ap := ta.AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap().WithZone(""), ap.Port()), ap.IsValid()
}
