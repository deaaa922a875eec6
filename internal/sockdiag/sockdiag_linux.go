//go:build linux

// Package sockdiag finds a local TCP socket by its address pair through
// NETLINK_SOCK_DIAG (the inet_diag interface of sock_diag(7)) and reports
// its inode, owner uid and, where the kernel reports it (Linux >= 5.9 with
// cgroup v2), the id of the cgroup its creator ran in.
package sockdiag

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Kernel ABI constants (linux/inet_diag.h, linux/sock_diag.h).
const (
	inetDiagCgroupID = 21 // INET_DIAG_CGROUP_ID: u64 attribute
	reqLen           = 56 // sizeof(struct inet_diag_req_v2)
	msgLen           = 72 // sizeof(struct inet_diag_msg)
	nlHdrLen         = unix.SizeofNlMsghdr
)

// ErrNotFound means no TCP socket with that address pair exists in the
// caller's network namespace.
var ErrNotFound = errors.New("sockdiag: no such socket")

// Socket is what the kernel reports about one socket. The zero CgroupID
// with HasCgroupID false means the kernel did not say.
type Socket struct {
	Inode       uint64 // the socket's inode ("socket:[N]" in /proc/<pid>/fd)
	UID         uint32 // owner uid of the socket
	CgroupID    uint64 // inode of the cgroup v2 directory of the creating task
	HasCgroupID bool
}

var seq atomic.Uint32

// LookupTCP returns the TCP socket whose own address is local and whose
// peer address is remote. An IPv4 address (or an IPv4-mapped IPv6 one) is
// looked up among AF_INET sockets first, then among AF_INET6 sockets with
// mapped addresses, since either kind of socket can connect to an IPv4
// listener.
func LookupTCP(local, remote netip.AddrPort) (Socket, error) {
	l, r := local.Addr().Unmap(), remote.Addr().Unmap()
	if l.Is4() != r.Is4() {
		return Socket{}, fmt.Errorf("sockdiag: mixed address families %s and %s", local, remote)
	}
	if !l.Is4() {
		return lookup(unix.AF_INET6, l, local.Port(), r, remote.Port())
	}
	s, err := lookup(unix.AF_INET, l, local.Port(), r, remote.Port())
	if !errors.Is(err, ErrNotFound) {
		return s, err
	}
	l6, r6 := netip.AddrFrom16(l.As16()), netip.AddrFrom16(r.As16())
	return lookup(unix.AF_INET6, l6, local.Port(), r6, remote.Port())
}

func lookup(family int, src netip.Addr, sport uint16, dst netip.Addr, dport uint16) (Socket, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return Socket{}, os.NewSyscallError("socket(NETLINK_SOCK_DIAG)", err)
	}
	defer unix.Close(fd)
	tv := unix.NsecToTimeval(int64(2 * time.Second))
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return Socket{}, os.NewSyscallError("setsockopt", err)
	}
	n := seq.Add(1)
	req := buildRequest(n, family, src, sport, dst, dport)
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return Socket{}, os.NewSyscallError("sendto(NETLINK_SOCK_DIAG)", err)
	}
	buf := make([]byte, 8192)
	for {
		m, _, err := unix.Recvfrom(fd, buf, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return Socket{}, os.NewSyscallError("recvfrom(NETLINK_SOCK_DIAG)", err)
		}
		s, done, err := parseReply(buf[:m], n)
		if done || err != nil {
			return s, err
		}
	}
}

// buildRequest encodes nlmsghdr + inet_diag_req_v2 for an exact lookup
// (no NLM_F_DUMP).
func buildRequest(seq uint32, family int, src netip.Addr, sport uint16, dst netip.Addr, dport uint16) []byte {
	ne := binary.NativeEndian
	b := make([]byte, nlHdrLen+reqLen)
	ne.PutUint32(b[0:], uint32(len(b)))
	ne.PutUint16(b[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(b[6:], unix.NLM_F_REQUEST)
	ne.PutUint32(b[8:], seq)
	r := b[nlHdrLen:]
	r[0] = byte(family)
	r[1] = unix.IPPROTO_TCP
	ne.PutUint32(r[4:], ^uint32(0)) // every state
	id := r[8:]
	binary.BigEndian.PutUint16(id[0:], sport)
	binary.BigEndian.PutUint16(id[2:], dport)
	putAddr(id[4:20], src)
	putAddr(id[20:36], dst)
	ne.PutUint32(id[40:], ^uint32(0)) // INET_DIAG_NOCOOKIE
	ne.PutUint32(id[44:], ^uint32(0))
	return b
}

func putAddr(dst []byte, a netip.Addr) {
	if a.Is4() {
		v := a.As4()
		copy(dst, v[:])
		return
	}
	v := a.As16()
	copy(dst, v[:])
}

// parseReply decodes the messages of one datagram. done is set once the
// answer to request seq was seen.
func parseReply(b []byte, seq uint32) (s Socket, done bool, err error) {
	ne := binary.NativeEndian
	for len(b) >= nlHdrLen {
		l := int(ne.Uint32(b[0:]))
		typ, mseq := ne.Uint16(b[4:]), ne.Uint32(b[8:])
		if l < nlHdrLen || l > len(b) {
			return Socket{}, true, errors.New("sockdiag: malformed netlink message")
		}
		msg, rest := b[nlHdrLen:l], b[min(nlAlign(l), len(b)):]
		b = rest
		if mseq != seq {
			continue // not the answer to our request
		}
		switch typ {
		case unix.NLMSG_ERROR:
			if len(msg) < 4 {
				return Socket{}, true, errors.New("sockdiag: short netlink error")
			}
			errno := -int32(ne.Uint32(msg[0:]))
			switch unix.Errno(errno) {
			case 0:
				continue
			case unix.ENOENT:
				return Socket{}, true, ErrNotFound
			default:
				return Socket{}, true, os.NewSyscallError("sock_diag", unix.Errno(errno))
			}
		case unix.NLMSG_DONE:
			return Socket{}, true, ErrNotFound
		case unix.SOCK_DIAG_BY_FAMILY:
			s, err := parseMsg(msg)
			return s, true, err
		}
	}
	return Socket{}, false, nil
}

// parseMsg decodes struct inet_diag_msg and its attributes.
func parseMsg(m []byte) (Socket, error) {
	ne := binary.NativeEndian
	if len(m) < msgLen {
		return Socket{}, errors.New("sockdiag: short inet_diag_msg")
	}
	s := Socket{UID: ne.Uint32(m[64:]), Inode: uint64(ne.Uint32(m[68:]))}
	attrs := m[msgLen:]
	for len(attrs) >= 4 {
		l := int(ne.Uint16(attrs[0:]))
		typ := ne.Uint16(attrs[2:]) &^ (unix.NLA_F_NESTED | unix.NLA_F_NET_BYTEORDER)
		if l < 4 || l > len(attrs) {
			break
		}
		if typ == inetDiagCgroupID && l >= 12 {
			s.CgroupID, s.HasCgroupID = ne.Uint64(attrs[4:]), true
		}
		attrs = attrs[min(nlAlign(l), len(attrs)):]
	}
	return s, nil
}

func nlAlign(n int) int { return (n + 3) &^ 3 }
