//go:build linux

package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// TestSeccompProxied: the proxied filters allow inet stream and datagram
// sockets and AF_UNIX socketpairs, refuse raw, SCTP, netlink, packet,
// vsock and AF_UNIX sockets (allowed by proxiedUnix), and keep connect,
// bind and sendto.
func TestSeccompProxied(t *testing.T) {
	a, err := nativeSeccompArch()
	if err != nil {
		t.Fatal(err)
	}
	const (
		allow = unix.SECCOMP_RET_ALLOW
		eperm = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	)
	nr := a.nr
	cases := []struct {
		name                 string
		nr, arg0, arg1       uint32
		proxied, proxiedUnix uint32
	}{
		{"socket inet stream", nr["socket"], unix.AF_INET, unix.SOCK_STREAM | unix.SOCK_CLOEXEC, allow, allow},
		{"socket inet dgram", nr["socket"], unix.AF_INET, unix.SOCK_DGRAM | unix.SOCK_NONBLOCK, allow, allow},
		{"socket inet6 stream", nr["socket"], unix.AF_INET6, unix.SOCK_STREAM, allow, allow},
		{"socket inet6 dgram", nr["socket"], unix.AF_INET6, unix.SOCK_DGRAM, allow, allow},
		{"socket inet raw", nr["socket"], unix.AF_INET, unix.SOCK_RAW, eperm, eperm},
		{"socket inet6 raw", nr["socket"], unix.AF_INET6, unix.SOCK_RAW, eperm, eperm},
		{"socket inet seqpacket (sctp)", nr["socket"], unix.AF_INET, unix.SOCK_SEQPACKET, eperm, eperm},
		{"socket packet", nr["socket"], unix.AF_PACKET, unix.SOCK_RAW, eperm, eperm},
		{"socket netlink", nr["socket"], unix.AF_NETLINK, unix.SOCK_RAW, eperm, eperm},
		{"socket vsock", nr["socket"], unix.AF_VSOCK, unix.SOCK_STREAM, eperm, eperm},
		{"socket unix stream", nr["socket"], unix.AF_UNIX, unix.SOCK_STREAM, eperm, allow},
		{"socket unix dgram", nr["socket"], unix.AF_UNIX, unix.SOCK_DGRAM, eperm, allow},
		{"socketpair unix", nr["socketpair"], unix.AF_UNIX, unix.SOCK_DGRAM, allow, allow},
		{"socketpair inet", nr["socketpair"], unix.AF_INET, unix.SOCK_STREAM, eperm, eperm},
		{"connect", nr["connect"], 3, 0, allow, allow},
		{"bind", nr["bind"], 3, 0, allow, allow},
		{"sendto", nr["sendto"], 3, 0, allow, allow},
		{"io_uring_setup", nr["io_uring_setup"], 0, 0, eperm, eperm},
	}
	for _, mode := range []SeccompMode{SeccompProxied, SeccompProxiedUnix} {
		prog, err := seccompProgram(mode, false, false, a)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := bpf.Assemble(prog); err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			want := c.proxied
			if mode == SeccompProxiedUnix {
				want = c.proxiedUnix
			}
			if got := runFilter(t, prog, a.audit, c.nr, c.arg0, c.arg1); got != want {
				t.Errorf("%s/%s: got %#x, want %#x", mode, c.name, got, want)
			}
		}
	}
}

// TestProxyFDLayout: the proxy control socket comes after the plan and the
// devpts mount, before a kept fd; Wrap sets it, passes the helper's end
// last in ExtraFiles, and turns the unix-send guard on unless every Unix
// socket is allowed.
func TestProxyFDLayout(t *testing.T) {
	proxied := Plan{NewNetNS: true, Seccomp: SeccompProxied, Proxy: &ProxyPlan{Routes: []string{RouteHTTP}}}
	if got := [2]int{ProxyFDFor(&proxied), KeepFDFor(&proxied)}; got != [2]int{4, 5} {
		t.Errorf("no pts: proxy, keep %v", got)
	}
	withPTS := proxied
	withPTS.PTSFD = PTSFD
	if got := [2]int{ProxyFDFor(&withPTS), KeepFDFor(&withPTS)}; got != [2]int{5, 6} {
		t.Errorf("pts: proxy, keep %v", got)
	}
	if plain := (Plan{}); KeepFDFor(&plain) != 4 {
		t.Errorf("no proxy: keep %d", KeepFDFor(&plain))
	}
	for _, tc := range []struct {
		mode  SeccompMode
		guard bool
	}{{SeccompProxied, true}, {SeccompProxiedUnix, false}} {
		p := proxied
		p.Seccomp = tc.mode
		w, err := Wrap(p)
		if err != nil {
			t.Fatal(err)
		}
		if w.DenyNamedUnixSends != tc.guard || len(w.ExtraFiles) != 2 || w.Cloneflags&unix.CLONE_NEWNET == 0 {
			t.Errorf("%s: guard %v, files %d, flags %#x", tc.mode, w.DenyNamedUnixSends, len(w.ExtraFiles), w.Cloneflags)
		}
		var sent Plan
		data, _ := io.ReadAll(io.NewSectionReader(w.ExtraFiles[0], 0, 1<<20))
		if err := json.Unmarshal(data, &sent); err != nil || sent.ProxyFD != 4 {
			t.Errorf("plan's proxy fd %d (%v)", sent.ProxyFD, err)
		}
		w.Close()
		if _, err := w.ProxyListeners(t.Context()); err == nil {
			t.Error("listeners from a helper never started")
		}
	}
}

// TestLauncherProxyLayout: with a terminal of its own, the helper gets the
// plan on 3, the devpts mount on 4 and the proxy control socket on 5.
func TestLauncherProxyLayout(t *testing.T) {
	plan := &Plan{ReadOnlyRoot: true, NewNetNS: true, Seccomp: SeccompProxied, Proxy: &ProxyPlan{Routes: []string{RouteHTTP, RouteSOCKS5}}}
	l := NewLauncher(plan, func(error) {})
	pts, err := os.Open(os.DevNull) // stands for the devpts mount
	if err != nil {
		t.Fatal(err)
	}
	l.pts = pts
	attr := &syscall.ProcAttr{Files: []uintptr{0, 1, 2}}
	if _, _, err := l.Apply("/bin/true", []string{"true"}, attr, -1); err != nil {
		t.Fatal(err)
	}
	if len(attr.Files) != 6 || attr.Files[4] != pts.Fd() {
		t.Fatalf("files %v, pts %d", attr.Files, pts.Fd())
	}
	if dom, err := unix.GetsockoptInt(int(attr.Files[5]), unix.SOL_SOCKET, unix.SO_TYPE); err != nil || dom != unix.SOCK_SEQPACKET {
		t.Errorf("fd 5 of the helper: type %d, %v", dom, err)
	}
	if _, _, err := l.Apply("/bin/true", []string{"true"}, &syscall.ProcAttr{Files: []uintptr{0, 1, 2}}, -1); err == nil {
		t.Error("a launcher applied twice")
	}
	l.Close()
	if _, err := l.ProxyListeners(t.Context()); err == nil || errors.Is(err, ErrNotProxied) {
		t.Errorf("listeners of a never-started helper: %v", err)
	}
	if _, err := l.ProxyListeners(t.Context()); !errors.Is(err, ErrNotProxied) {
		t.Errorf("second call: %v", err)
	}
}

// TestProxyControlBounded: the server's end never waits past its context
// (a helper that never sends), closes whatever arrived that is not the
// plan's loopback listeners, and leaks no fd on any path.
func TestProxyControlBounded(t *testing.T) {
	count := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	before := count()
	routes := []string{RouteHTTP, RouteSOCKS5}
	listen := func() int {
		fd, _, err := loopbackListener()
		if err != nil {
			t.Fatal(err)
		}
		return fd
	}
	send := func(far *os.File, msg string, fds ...int) {
		if err := unix.Sendmsg(int(far.Fd()), []byte(msg), unix.UnixRights(fds...), nil, 0); err != nil {
			t.Fatal(err)
		}
		for _, fd := range fds {
			unix.Close(fd)
		}
	}
	t.Run("silent helper, deadline", func(t *testing.T) {
		ctl, far, err := newProxyControl(routes)
		if err != nil {
			t.Fatal(err)
		}
		defer far.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		if _, err := ctl.listeners(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("got %v", err)
		}
	})
	t.Run("silent helper, cancel", func(t *testing.T) {
		ctl, far, err := newProxyControl(routes)
		if err != nil {
			t.Fatal(err)
		}
		defer far.Close()
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(50*time.Millisecond, cancel)
		if _, err := ctl.listeners(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("got %v", err)
		}
	})
	for name, tc := range map[string]struct {
		msg  string
		fds  func() []int
		want string
	}{
		"wrong routes": {"codex-proxy-listeners:http", func() []int { return []int{listen()} }, "want"},
		"fd missing":   {"codex-proxy-listeners:http,socks5", func() []int { return []int{listen()} }, "want"},
		"not listening": {"codex-proxy-listeners:http,socks5", func() []int {
			fd, _ := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
			return []int{listen(), fd}
		}, "not listening"},
		"a unix socket": {"codex-proxy-listeners:http,socks5", func() []int {
			fds, _ := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
			unix.Close(fds[1])
			return []int{fds[0], listen()}
		}, "not an IPv4 socket"},
	} {
		t.Run(name, func(t *testing.T) {
			ctl, far, err := newProxyControl(routes)
			if err != nil {
				t.Fatal(err)
			}
			send(far, tc.msg, tc.fds()...)
			far.Close()
			ls, err := ctl.listeners(t.Context())
			if err == nil || !strings.Contains(err.Error(), tc.want) || ls != nil {
				t.Errorf("got %v, %v", ls, err)
			}
		})
	}
	t.Run("good", func(t *testing.T) {
		ctl, far, err := newProxyControl(routes)
		if err != nil {
			t.Fatal(err)
		}
		send(far, "codex-proxy-listeners:http,socks5", listen(), listen())
		far.Close()
		ls, err := ctl.listeners(t.Context())
		if err != nil || len(ls) != 2 || ls[0].Route != RouteHTTP || ls[1].Route != RouteSOCKS5 {
			t.Fatalf("got %v, %v", ls, err)
		}
		for _, l := range ls {
			c, err := net.Dial("tcp", l.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			s, err := l.Listener.Accept()
			if err != nil {
				t.Fatal(err)
			}
			c.Close()
			s.Close()
			l.Listener.Close()
		}
	})
	if after := count(); after != before {
		t.Errorf("open fds %d, before %d", after, before)
	}
}
