//go:build linux

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The proxy control socket (Plan.ProxyFD) carries one message from the
// helper to the server: proxyMsgPrefix and the routes joined by commas,
// with the listening sockets, in the same order, as SCM_RIGHTS. It is a
// SOCK_SEQPACKET pair, so the message arrives whole or not at all.
const (
	proxyMsgPrefix = "codex-proxy-listeners:"
	proxyMaxRoutes = 8
)

// proxyControl is the server's end of a proxied plan's control socket.
type proxyControl struct {
	f      *os.File
	routes []string
}

// newProxyControl makes the control socket of a plan with routes: the
// server's end and the helper's (which the spawner passes as
// Plan.ProxyFD). Both are close-on-exec.
func newProxyControl(routes []string) (*proxyControl, *os.File, error) {
	if len(routes) == 0 || len(routes) > proxyMaxRoutes {
		return nil, nil, fmt.Errorf("proxy routes %q", routes)
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, os.NewSyscallError("socketpair", err)
	}
	ctl := &proxyControl{f: os.NewFile(uintptr(fds[0]), "proxy-control"), routes: slices.Clone(routes)}
	return ctl, os.NewFile(uintptr(fds[1]), "proxy-control-helper"), nil
}

// listeners receives the helper's listeners (WrappedCommand.ProxyListeners)
// and closes the control socket. A nil control (no proxy) gives
// ErrNotProxied.
func (c *proxyControl) listeners(ctx context.Context) ([]ProxyListener, error) {
	if c == nil {
		return nil, ErrNotProxied
	}
	fc, err := net.FileConn(c.f)
	c.f.Close()
	if err != nil {
		return nil, fmt.Errorf("sandbox: proxy control socket: %w", err)
	}
	conn := fc.(*net.UnixConn)
	defer conn.Close()
	if d, ok := ctx.Deadline(); ok {
		_ = conn.SetReadDeadline(d)
	}
	// A cancelled ctx ends the read at once; stop waits for the callback,
	// so that no goroutine outlives the call.
	done := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(done)
		_ = conn.SetReadDeadline(time.Unix(1, 0))
	})
	defer func() {
		if !stop() {
			<-done
		}
	}()

	buf := make([]byte, len(proxyMsgPrefix)+64*proxyMaxRoutes)
	oob := make([]byte, unix.CmsgSpace(4*(proxyMaxRoutes+1)))
	n, oobn, flags, _, err := conn.ReadMsgUnix(buf, oob)
	fds := rightsOf(oob[:oobn])
	closeAll := func() {
		for _, fd := range fds {
			_ = unix.Close(fd)
		}
	}
	switch {
	case err != nil && ctx.Err() != nil:
		closeAll()
		return nil, fmt.Errorf("sandbox: waiting for the proxy listeners: %w", ctx.Err())
	case err != nil:
		closeAll()
		return nil, fmt.Errorf("sandbox: waiting for the proxy listeners: %w", err)
	case n == 0 && oobn == 0:
		return nil, errors.New("sandbox: the sandbox helper ended without sending its proxy listeners")
	case flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0:
		closeAll()
		return nil, errors.New("sandbox: proxy listeners: truncated message")
	}
	want := proxyMsgPrefix + strings.Join(c.routes, ",")
	if string(buf[:n]) != want || len(fds) != len(c.routes) {
		closeAll()
		return nil, fmt.Errorf("sandbox: proxy listeners: got %q with %d sockets, want %q with %d", buf[:n], len(fds), want, len(c.routes))
	}
	out := make([]ProxyListener, 0, len(fds))
	for i, fd := range fds {
		l, err := proxyListener(fd)
		if err != nil {
			for _, pl := range out {
				pl.Listener.Close()
			}
			for _, fd := range fds[i+1:] {
				_ = unix.Close(fd)
			}
			return nil, fmt.Errorf("sandbox: proxy listener %s: %w", c.routes[i], err)
		}
		out = append(out, ProxyListener{Route: c.routes[i], Listener: l})
	}
	return out, nil
}

// rightsOf returns the fds of the SCM_RIGHTS messages in oob.
func rightsOf(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		if r, err := unix.ParseUnixRights(&m); err == nil {
			fds = append(fds, r...)
		}
	}
	return fds
}

// proxyListener checks that fd is a listening TCP socket on 127.0.0.1 and
// returns it as a net.Listener. It closes fd on every path.
func proxyListener(fd int) (net.Listener, error) {
	f := os.NewFile(uintptr(fd), "proxy-listener")
	defer f.Close()
	if err := checkProxyListener(fd); err != nil {
		return nil, err
	}
	return net.FileListener(f)
}

// checkProxyListener reports whether fd is what the helper must send: an
// AF_INET stream socket listening on 127.0.0.1.
func checkProxyListener(fd int) error {
	if v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN); err != nil || v != unix.AF_INET {
		return errors.New("not an IPv4 socket")
	}
	if v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE); err != nil || v != unix.SOCK_STREAM {
		return errors.New("not a stream socket")
	}
	if v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ACCEPTCONN); err != nil || v != 1 {
		return errors.New("not listening")
	}
	sa, err := unix.Getsockname(fd)
	if in4, ok := sa.(*unix.SockaddrInet4); err != nil || !ok || in4.Addr != [4]byte{127, 0, 0, 1} {
		return errors.New("not bound to 127.0.0.1")
	}
	return nil
}

// openProxy is the helper's part of a proxied plan (Plan.Proxy;
// docs/sandbox.md §4.9), before anything is enforced: in the command's
// fresh network namespace it brings up lo, opens a TCP listener on
// 127.0.0.1:0 per route, sends them over Plan.ProxyFD, closes them and
// the fd, and returns the proxy variables of those ports. Any failure
// refuses the command. A plan without a proxy returns nothing.
func openProxy(p *Plan) ([]string, error) {
	if p.Proxy == nil {
		if p.ProxyFD != 0 || p.Seccomp.Proxied() {
			return nil, errors.New("proxy: a proxy fd or filter without a proxy")
		}
		return nil, nil
	}
	fd := p.ProxyFD
	if fd < 3 || fd == planFD || (p.PTSFD != 0 && fd == p.PTSFD) || fd == p.KeepFD || fd == p.TraceExecFD {
		return nil, fmt.Errorf("proxy: control fd %d: not a free inherited fd", fd)
	}
	defer unix.Close(fd)
	if err := checkUnixSocket(fd); err != nil {
		return nil, fmt.Errorf("proxy: control fd %d: %w", fd, err)
	}
	if !p.NewNetNS || !p.Seccomp.Proxied() || p.FSHelper || p.Unsandboxed {
		return nil, errors.New("proxy: a proxied plan needs a network namespace of its own and the proxied filter")
	}
	if len(p.Proxy.Routes) == 0 || len(p.Proxy.Routes) > proxyMaxRoutes {
		return nil, fmt.Errorf("proxy: routes %q", p.Proxy.Routes)
	}
	if err := onlyLoopback(); err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	if err := loopbackUpErr(); err != nil {
		return nil, fmt.Errorf("proxy: bringing up lo: %w", err)
	}
	var fds []int
	defer func() {
		for _, l := range fds {
			_ = unix.Close(l)
		}
	}()
	ports := map[string]int{}
	for _, r := range p.Proxy.Routes {
		if r != RouteHTTP && r != RouteSOCKS5 || ports[r] != 0 {
			return nil, fmt.Errorf("proxy: route %q", r)
		}
		l, port, err := loopbackListener()
		if err != nil {
			return nil, fmt.Errorf("proxy: listener for %s: %w", r, err)
		}
		fds = append(fds, l)
		ports[r] = port
	}
	if _, ok := ports[RouteHTTP]; !ok {
		return nil, errors.New("proxy: no http route")
	}
	msg := []byte(proxyMsgPrefix + strings.Join(p.Proxy.Routes, ","))
	if err := unix.Sendmsg(fd, msg, unix.UnixRights(fds...), nil, 0); err != nil {
		return nil, fmt.Errorf("proxy: failed to transfer the proxy listeners: %w", os.NewSyscallError("sendmsg", err))
	}
	return proxyEnv(p.Proxy, ports), nil
}

// checkUnixSocket reports whether fd is an open Unix socket.
func checkUnixSocket(fd int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return errors.New("not a socket")
	}
	if dom, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN); err != nil || dom != unix.AF_UNIX {
		return errors.New("not a Unix socket")
	}
	return nil
}

// onlyLoopback checks that the helper's network namespace is a fresh one:
// it has no interface but lo, so nothing but the proxy leads out.
func onlyLoopback() error {
	ifs, err := net.Interfaces()
	if err != nil {
		return fmt.Errorf("listing interfaces: %w", err)
	}
	for _, i := range ifs {
		if i.Name != "lo" {
			return fmt.Errorf("the network namespace has interface %s: not a fresh one", i.Name)
		}
	}
	return nil
}

// loopbackListener opens a TCP listener on 127.0.0.1:0 (close-on-exec, no
// SO_REUSEPORT) and returns it with its port.
func loopbackListener() (fd, port int, err error) {
	fd, err = unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, 0, os.NewSyscallError("socket", err)
	}
	fail := func(op string, err error) (int, int, error) {
		_ = unix.Close(fd)
		return -1, 0, os.NewSyscallError(op, err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return fail("bind", err)
	}
	if err := unix.Listen(fd, unix.SOMAXCONN); err != nil {
		return fail("listen", err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return fail("getsockname", err)
	}
	in4, ok := sa.(*unix.SockaddrInet4)
	if !ok || in4.Port == 0 {
		return fail("getsockname", unix.EAFNOSUPPORT)
	}
	return fd, in4.Port, nil
}
