package netproxy

import "net/netip"

// localV4 are the IPv4 ranges that are not globally reachable unicast
// (IANA special-purpose registry): a name resolving into one of them, or
// a literal in one of them that the policy does not list exactly, is
// "local" (spec §4.2).
var localV4 = prefixes(
	"0.0.0.0/8",       // "this network"
	"10.0.0.0/8",      // RFC 1918
	"100.64.0.0/10",   // CGNAT
	"127.0.0.0/8",     // loopback
	"169.254.0.0/16",  // link-local
	"172.16.0.0/12",   // RFC 1918
	"192.0.0.0/24",    // IETF protocol assignments
	"192.0.2.0/24",    // documentation
	"192.88.99.0/24",  // 6to4 relay anycast (deprecated)
	"192.168.0.0/16",  // RFC 1918
	"198.18.0.0/15",   // benchmarking
	"198.51.100.0/24", // documentation
	"203.0.113.0/24",  // documentation
	"224.0.0.0/4",     // multicast
	"240.0.0.0/4",     // reserved, and 255.255.255.255 broadcast
)

// localV6 are the IPv6 ranges that are not globally reachable unicast.
// IPv4-mapped addresses are unmapped before they get here; NAT64 and 6to4
// are judged by the IPv4 address they embed (embeddedV4).
var localV6 = prefixes(
	"::/96",          // unspecified, loopback and the deprecated IPv4-compatible form
	"100::/64",       // discard-only
	"2001::/32",      // Teredo (embeds an obfuscated IPv4 of either end)
	"2001:2::/48",    // benchmarking
	"2001:10::/28",   // ORCHID
	"2001:20::/28",   // ORCHIDv2
	"2001:db8::/32",  // documentation
	"3fff::/20",      // documentation
	"5f00::/16",      // segment routing SIDs
	"64:ff9b:1::/48", // local-use NAT64
	"fc00::/7",       // unique local
	"fe80::/10",      // link-local
	"fec0::/10",      // site-local (deprecated)
	"ff00::/8",       // multicast
)

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

func prefixes(s ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(s))
	for i, p := range s {
		out[i] = netip.MustParsePrefix(p)
	}
	return out
}

// isLocal reports whether a is not a globally reachable unicast address
// of either family: loopback, private, link-local, CGNAT, multicast,
// reserved, unspecified, documentation, and the IPv6 forms that carry a
// local IPv4 address (mapped, NAT64, 6to4). An invalid address is local
// (fail closed).
func isLocal(a netip.Addr) bool {
	if !a.IsValid() {
		return true
	}
	a = a.WithZone("").Unmap()
	if a.Is4() {
		for _, p := range localV4 {
			if p.Contains(a) {
				return true
			}
		}
		return false
	}
	if v4, ok := embeddedV4(a); ok {
		return isLocal(v4)
	}
	for _, p := range localV6 {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// embeddedV4 returns the IPv4 address a NAT64 (64:ff9b::/96) or 6to4
// (2002::/16) address carries.
func embeddedV4(a netip.Addr) (netip.Addr, bool) {
	b := a.As16()
	switch {
	case nat64.Contains(a):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return netip.Addr{}, false
}
