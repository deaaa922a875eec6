//go:build linux

package sockdiag

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// fdInode returns the inode of the socket behind c.
func fdInode(t *testing.T, c *net.TCPConn) uint64 {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.Fstat(int(fd), &st) }); err != nil {
		t.Fatal(err)
	}
	if serr != nil {
		t.Fatal(serr)
	}
	return st.Ino
}

// ownCgroupID returns the inode of our cgroup v2 directory, or 0.
func ownCgroupID(t *testing.T) uint64 {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0
	}
	var rel string
	for _, line := range strings.Split(string(data), "\n") {
		if r, ok := strings.CutPrefix(line, "0::"); ok {
			rel = r
		}
	}
	mounts, _ := os.ReadFile("/proc/mounts")
	for _, line := range strings.Split(string(mounts), "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[2] == "cgroup2" && rel != "" {
			var st unix.Stat_t
			if unix.Stat(f[1]+rel, &st) == nil {
				return st.Ino
			}
		}
	}
	return 0
}

func pair(t *testing.T, network, addr string) (client, server *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Skipf("no %s listener on %s: %v", network, addr, err)
	}
	defer ln.Close()
	c, err := net.Dial(network, ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := ln.Accept()
	if err != nil {
		c.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c.(*net.TCPConn), s.(*net.TCPConn)
}

func addrPort(a net.Addr) netip.AddrPort { return a.(*net.TCPAddr).AddrPort() }

func TestLookupPeerOfAcceptedConn(t *testing.T) {
	for _, tc := range []struct{ network, addr string }{
		{"tcp4", "127.0.0.1:0"},
		{"tcp6", "[::1]:0"},
		{"tcp", "[::]:0"}, // dual stack: the accepted side sees a mapped address
	} {
		t.Run(tc.addr, func(t *testing.T) {
			var client, server *net.TCPConn
			if tc.addr == "[::]:0" {
				ln, err := net.Listen("tcp", tc.addr)
				if err != nil {
					t.Skipf("no dual-stack listener: %v", err)
				}
				port := ln.Addr().(*net.TCPAddr).Port
				c, err := net.Dial("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
				if err != nil {
					ln.Close()
					t.Fatal(err)
				}
				s, err := ln.Accept()
				ln.Close()
				if err != nil {
					c.Close()
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close(); s.Close() })
				client, server = c.(*net.TCPConn), s.(*net.TCPConn)
			} else {
				client, server = pair(t, tc.network, tc.addr)
			}
			// The peer of the accepted conn: its local address is our
			// remote one and the other way round.
			sock, err := LookupTCP(addrPort(server.RemoteAddr()), addrPort(server.LocalAddr()))
			if errors.Is(err, syscall.EPROTONOSUPPORT) || errors.Is(err, syscall.EAFNOSUPPORT) {
				t.Skipf("sock_diag unavailable: %v", err)
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := fdInode(t, client); sock.Inode != want {
				t.Errorf("inode %d, want the client socket's %d", sock.Inode, want)
			}
			pn, err := LookupProcNet(addrPort(server.RemoteAddr()), addrPort(server.LocalAddr()))
			if err != nil || pn.Inode != sock.Inode || pn.UID != sock.UID {
				t.Errorf("/proc/net: %+v, %v; sock_diag: %+v", pn, err, sock)
			}
			if sock.UID != uint32(os.Geteuid()) {
				t.Errorf("uid %d, want %d", sock.UID, os.Geteuid())
			}
			if id := ownCgroupID(t); id != 0 && sock.HasCgroupID && sock.CgroupID != id {
				t.Errorf("cgroup id %d, want ours %d", sock.CgroupID, id)
			}
			if ownCgroupID(t) != 0 && !sock.HasCgroupID {
				t.Logf("kernel reported no INET_DIAG_CGROUP_ID (before Linux 5.9?)")
			} else if !sock.HasCgroupID || sock.CgroupID == 0 {
				t.Logf("no cgroup v2 here")
			} else {
				t.Logf("cgroup id %d", sock.CgroupID)
			}
		})
	}
}

func TestLookupMissing(t *testing.T) {
	client, _ := pair(t, "tcp4", "127.0.0.1:0")
	local := addrPort(client.LocalAddr())
	// A port pair nobody uses.
	bogus := netip.AddrPortFrom(local.Addr(), 1)
	_, err := LookupTCP(bogus, addrPort(client.RemoteAddr()))
	if errors.Is(err, syscall.EPROTONOSUPPORT) {
		t.Skipf("sock_diag unavailable: %v", err)
	}
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("err %v, want ErrNotFound", err)
	}
	if _, err := LookupProcNet(bogus, addrPort(client.RemoteAddr())); !errors.Is(err, ErrNotFound) {
		t.Fatalf("/proc/net: err %v, want ErrNotFound", err)
	}
	if _, err := LookupTCP(local, netip.MustParseAddrPort("[::1]:80")); err == nil {
		t.Fatal("mixed families: no error")
	}
}

func BenchmarkLookupTCP(b *testing.B) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	local, remote := addrPort(s.RemoteAddr()), addrPort(s.LocalAddr())
	b.Run("sock_diag", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := LookupTCP(local, remote); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("proc_net", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := LookupProcNet(local, remote); err != nil {
				b.Fatal(err)
			}
		}
	})
}
