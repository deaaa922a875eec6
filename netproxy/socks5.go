package netproxy

// SOCKS5 (RFC 1928), CONNECT only, no authentication. Written here rather
// than taken from a package: the server packages we looked at
// (things-go/go-socks5, armon/go-socks5) resolve a name through a
// resolver that returns one address and answer a failed lookup with reply
// 4, while the policy needs every address of the answer checked, only
// those dialled, and reply 2 for every refusal; their rule sets, resolvers
// and dialers would have to be bent until the package did nothing but
// frame ~40 bytes, which is what this file does.

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"strconv"
	"syscall"
	"time"
)

// SOCKS5 reply codes (RFC 1928 §6).
const (
	socksSucceeded        = 0
	socksGeneralFailure   = 1
	socksNotAllowed       = 2 // connection not allowed by ruleset
	socksNetUnreachable   = 3
	socksHostUnreachable  = 4
	socksConnRefused      = 5
	socksCmdNotSupported  = 7
	socksAddrNotSupported = 8
)

// socksRequest is a decoded SOCKS5 request.
type socksRequest struct {
	cmd  byte
	host string // normalised name, or an IP literal's text
	port int
}

// errSocksVersion is a request that is not SOCKS5.
var errSocksVersion = errors.New("not a SOCKS5 request")

// socksReplyError is a request the server must answer with a reply code
// and then close.
type socksReplyError byte

func (e socksReplyError) Error() string { return "SOCKS5 reply " + strconv.Itoa(int(e)) }

// readSocksGreeting reads the method negotiation and reports whether "no
// authentication" was offered.
func readSocksGreeting(r io.Reader) (bool, error) {
	var h [2]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return false, err
	}
	if h[0] != 5 {
		return false, errSocksVersion
	}
	methods := make([]byte, h[1])
	if _, err := io.ReadFull(r, methods); err != nil {
		return false, err
	}
	for _, m := range methods {
		if m == 0 {
			return true, nil
		}
	}
	return false, nil
}

// readSocksRequest decodes one request: VER CMD RSV ATYP DST.ADDR
// DST.PORT. A command other than CONNECT, or an unknown address type, is
// a socksReplyError once the request has been read whole.
func readSocksRequest(r io.Reader) (socksRequest, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return socksRequest{}, err
	}
	if h[0] != 5 {
		return socksRequest{}, errSocksVersion
	}
	var req socksRequest
	req.cmd = h[1]
	switch h[3] {
	case 1:
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return req, err
		}
		req.host = netip.AddrFrom4(b).String()
	case 4:
		var b [16]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return req, err
		}
		req.host = netip.AddrFrom16(b).String()
	case 3:
		var n [1]byte
		if _, err := io.ReadFull(r, n[:]); err != nil {
			return req, err
		}
		name := make([]byte, n[0])
		if _, err := io.ReadFull(r, name); err != nil {
			return req, err
		}
		req.host = normalizeHost(string(name))
	default:
		return req, socksReplyError(socksAddrNotSupported)
	}
	var p [2]byte
	if _, err := io.ReadFull(r, p[:]); err != nil {
		return req, err
	}
	req.port = int(p[0])<<8 | int(p[1])
	if req.cmd != 1 {
		return req, socksReplyError(socksCmdNotSupported)
	}
	if !validHost(req.host) {
		return req, socksReplyError(socksHostUnreachable)
	}
	return req, nil
}

// validHost refuses an empty host and bytes no host name or address
// literal carries.
func validHost(h string) bool {
	if h == "" {
		return false
	}
	for _, c := range []byte(h) {
		if c <= ' ' || c >= 0x7f || c == '/' || c == '\\' || c == '@' {
			return false
		}
	}
	return true
}

// socksReply writes a reply with the given bound address (zero: 0.0.0.0:0).
func socksReply(w io.Writer, code byte, bound netip.AddrPort) error {
	b := make([]byte, 0, 22)
	b = append(b, 5, code, 0)
	a := bound.Addr().Unmap()
	if a.Is6() {
		b = append(b, 4)
		s := a.As16()
		b = append(b, s[:]...)
	} else {
		b = append(b, 1)
		s := [4]byte{}
		if a.Is4() {
			s = a.As4()
		}
		b = append(b, s[:]...)
	}
	b = append(b, byte(bound.Port()>>8), byte(bound.Port()))
	_, err := w.Write(b)
	return err
}

// handleSOCKS5 serves one SOCKS5 client connection.
func (p *Proxy) handleSOCKS5(c net.Conn) {
	br := readers.Get().(*bufio.Reader)
	br.Reset(c)
	defer func() { br.Reset(nil); readers.Put(br) }()
	c.SetDeadline(time.Now().Add(p.o.HandshakeTimeout))
	ok, err := readSocksGreeting(br)
	if err != nil {
		return
	}
	if !ok {
		c.Write([]byte{5, 0xff})
		return
	}
	if _, err := c.Write([]byte{5, 0}); err != nil {
		return
	}
	req, err := readSocksRequest(br)
	var re socksReplyError
	if errors.As(err, &re) {
		socksReply(c, byte(re), netip.AddrPort{})
		return
	}
	if err != nil {
		return
	}
	c.SetDeadline(time.Time{})
	r := Request{Protocol: "socks5_tcp", Host: req.host, Port: req.port, Client: c.RemoteAddr().String()}
	d := p.decide(r, func() (context.Context, func()) { return p.watchClient(c, br) })
	c.SetWriteDeadline(time.Now().Add(p.o.HandshakeTimeout))
	if !d.Allowed {
		socksReply(c, socksNotAllowed, netip.AddrPort{})
		return
	}
	up, err := p.dialFor(d, req.port)
	if err != nil {
		socksReply(c, socksDialReply(err), netip.AddrPort{})
		return
	}
	defer p.untrack(up)
	var bound netip.AddrPort
	if ta, ok := up.LocalAddr().(*net.TCPAddr); ok {
		bound = ta.AddrPort()
	}
	if socksReply(c, socksSucceeded, bound) != nil {
		return
	}
	c.SetWriteDeadline(time.Time{})
	if n := br.Buffered(); n > 0 {
		b, _ := br.Peek(n)
		if _, err := up.Write(b); err != nil {
			return
		}
	}
	pipe(c, up)
}

// socksDialReply maps a failed upstream connect to its reply code.
func socksDialReply(err error) byte {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return socksConnRefused
	case errors.Is(err, syscall.ENETUNREACH):
		return socksNetUnreachable
	case errors.Is(err, syscall.EHOSTUNREACH), isTimeout(err), errors.Is(err, errNoAddress):
		return socksHostUnreachable
	}
	return socksGeneralFailure
}
