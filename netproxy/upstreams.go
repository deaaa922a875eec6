package netproxy

import (
	"net"
	"net/netip"
	"sync"
)

// Upstreams is the set of the local addresses of the live upstream
// connections of the proxies that share it (Options.Upstreams): the
// connections a proxy made on behalf of its command. A server that runs
// the proxies asks it about every local peer of its own listeners
// (Holds): the proxy's upstream socket is the server's own, so the peer
// check, which knows sandboxed commands by the sockets they make, would
// otherwise take a command that asked its proxy for the server's own port
// (a listed 127.0.0.1, a name resolving to loopback with local binding,
// a reviewed host) for the server itself, and serve it.
//
// An address is added when its connection is established, before the
// proxy sends anything on it, and removed when the proxy closes it, so a
// request that reached a listener through a proxy always finds it. The
// zero value is ready to use; a nil *Upstreams holds nothing.
type Upstreams struct {
	mu sync.Mutex
	m  map[netip.AddrPort]int
}

// Holds reports whether addr (a TCP address) is the local end of a live
// upstream connection of a proxy sharing u.
func (u *Upstreams) Holds(addr net.Addr) bool {
	a, ok := tcpAddrPort(addr)
	if u == nil || !ok {
		return false
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.m[a] > 0
}

// add records the local end of c and returns it; ok is false when c has
// no TCP local address (a test's dialer), which is then not recorded.
func (u *Upstreams) add(c net.Conn) (netip.AddrPort, bool) {
	a, ok := tcpAddrPort(c.LocalAddr())
	if u == nil || !ok {
		return netip.AddrPort{}, false
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.m == nil {
		u.m = map[netip.AddrPort]int{}
	}
	u.m[a]++
	return a, true
}

func (u *Upstreams) remove(a netip.AddrPort) {
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
