package netproxy

import (
	"net/netip"
	"testing"
)

// TestIsLocal: every non-global range of both families is local, the
// IPv6 forms that carry an IPv4 address are judged by it, and global
// unicast is not.
func TestIsLocal(t *testing.T) {
	local := []string{
		"0.0.0.0", "0.1.2.3", "10.231.0.1", "100.64.0.7", "100.127.255.255", "127.0.0.1", "127.255.0.1",
		"169.254.7.7", "172.16.0.1", "172.31.255.255", "192.0.0.8", "192.0.2.1", "192.168.1.1",
		"198.18.0.1", "198.19.255.255", "198.51.100.1", "203.0.113.9", "224.0.0.1", "239.255.255.250",
		"240.0.0.1", "255.255.255.255",
		"::", "::1", "::10.231.0.1", "fc00::1", "fd12:3456::1", "fe80::1", "fe80::1%eth0", "febf::1",
		"fec0::1", "ff02::1", "ff0e::1",
		"::ffff:127.0.0.1", "::ffff:10.231.0.1", "::ffff:0.0.0.0",
		"64:ff9b::a00:1", "64:ff9b::7f00:1", "64:ff9b:1::1",
		"2002:a00:1::1", "2002:7f00:1::", "2001::1", "2001:db8::1", "100::1",
	}
	global := []string{
		"93.184.216.34", "1.1.1.1", "8.8.8.8", "100.63.255.255", "100.128.0.1", "172.15.255.255", "172.32.0.1",
		"192.0.1.1", "198.17.255.255", "198.20.0.1", "223.255.255.255",
		"2606:2800:220:1:248:1893:25c8:1946", "2a00:1450:4001::1",
		"::ffff:93.184.216.34", "64:ff9b::5db8:d822", "2002:5db8:d822::1",
	}
	for _, s := range local {
		if !isLocal(netip.MustParseAddr(s)) {
			t.Errorf("%s is local", s)
		}
	}
	for _, s := range global {
		if isLocal(netip.MustParseAddr(s)) {
			t.Errorf("%s is global", s)
		}
	}
	if !isLocal(netip.Addr{}) {
		t.Error("the invalid address is local (fail closed)")
	}
}
