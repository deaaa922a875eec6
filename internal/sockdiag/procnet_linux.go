//go:build linux

package sockdiag

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// LookupProcNet finds the same socket as LookupTCP through
// /proc/net/tcp and /proc/net/tcp6 instead of netlink, for hosts where
// NETLINK_SOCK_DIAG is unavailable. It reports no cgroup id.
func LookupProcNet(local, remote netip.AddrPort) (Socket, error) {
	l, r := local.Addr().Unmap(), remote.Addr().Unmap()
	if l.Is4() != r.Is4() {
		return Socket{}, fmt.Errorf("sockdiag: mixed address families %s and %s", local, remote)
	}
	type try struct {
		file string
		l, r netip.Addr
	}
	tries := []try{{"/proc/net/tcp6", l, r}}
	if l.Is4() {
		tries = []try{{"/proc/net/tcp", l, r}, {"/proc/net/tcp6", netip.AddrFrom16(l.As16()), netip.AddrFrom16(r.As16())}}
	}
	for _, t := range tries {
		s, err := scanProcNet(t.file, netip.AddrPortFrom(t.l, local.Port()), netip.AddrPortFrom(t.r, remote.Port()))
		if err == nil {
			return s, nil
		}
		if err != ErrNotFound && !os.IsNotExist(err) {
			return Socket{}, err
		}
	}
	return Socket{}, ErrNotFound
}

func scanProcNet(file string, local, remote netip.AddrPort) (Socket, error) {
	f, err := os.Open(file)
	if err != nil {
		return Socket{}, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 {
			continue
		}
		la, err1 := parseProcNetAddr(fields[1])
		ra, err2 := parseProcNetAddr(fields[2])
		if err1 != nil || err2 != nil || la != local || ra != remote {
			continue
		}
		uid, _ := strconv.ParseUint(fields[7], 10, 32)
		ino, err := strconv.ParseUint(fields[9], 10, 64)
		if err != nil {
			return Socket{}, fmt.Errorf("sockdiag: %s: bad inode %q", file, fields[9])
		}
		return Socket{Inode: ino, UID: uint32(uid)}, nil
	}
	if err := sc.Err(); err != nil {
		return Socket{}, err
	}
	return Socket{}, ErrNotFound
}

// parseProcNetAddr decodes "HEXADDR:HEXPORT": the address is the raw
// network-order bytes printed as host-order 32-bit words.
func parseProcNetAddr(s string) (netip.AddrPort, error) {
	a, p, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("sockdiag: bad address %q", s)
	}
	raw, err := hex.DecodeString(a)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, fmt.Errorf("sockdiag: bad address %q", s)
	}
	for i := 0; i < len(raw); i += 4 {
		w := binary.BigEndian.Uint32(raw[i:])
		binary.NativeEndian.PutUint32(raw[i:], w)
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("sockdiag: bad port %q", s)
	}
	addr, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(addr, uint16(port)), nil
}
