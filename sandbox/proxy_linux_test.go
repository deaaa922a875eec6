//go:build linux

package sandbox_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/codexec/codex/sandbox"
)

// runProxyTestHelper runs the helper program modes of the proxied-network
// tests; ok is false for a mode it does not know.
func runProxyTestHelper(args []string) (code int, ok bool) {
	report := func(what string, err error) int {
		if err != nil {
			fmt.Printf("%s errno=%s\n", what, errnoName(err))
			return 1
		}
		fmt.Println("ok")
		return 0
	}
	sock := func(what string, domain, typ, proto int) int {
		fd, err := unix.Socket(domain, typ, proto)
		if err == nil {
			unix.Close(fd)
		}
		return report(what, err)
	}
	switch args[0] {
	case "raw4": // socket(AF_INET, SOCK_RAW, IPPROTO_ICMP)
		return sock("raw4", unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP), true
	case "raw6": // socket(AF_INET6, SOCK_RAW, IPPROTO_ICMPV6)
		return sock("raw6", unix.AF_INET6, unix.SOCK_RAW, unix.IPPROTO_ICMPV6), true
	case "packet": // socket(AF_PACKET, SOCK_RAW, ETH_P_ALL)
		return sock("packet", unix.AF_PACKET, unix.SOCK_RAW, 0x0300), true
	case "netlink": // socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE), then a link dump
		return report("netlink", netlinkDump()), true
	case "sctp": // socket(AF_INET, SOCK_SEQPACKET, IPPROTO_SCTP)
		return sock("sctp", unix.AF_INET, unix.SOCK_SEQPACKET, unix.IPPROTO_SCTP), true
	case "unixdial": // unixdial PATH (@NAME: abstract): connect and read a line
		c, err := net.DialTimeout("unix", args[1], 5*time.Second)
		if err == nil {
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			_, err = bufio.NewReader(c).ReadString('\n')
			c.Close()
		}
		return report("unixdial", err), true
	case "tcpsend": // tcpsend ADDR: connect and send a line
		c, err := net.DialTimeout("tcp", args[1], 5*time.Second)
		if err == nil {
			_, err = c.Write([]byte("escaped\n"))
			c.Close()
		}
		return report("tcpsend", err), true
	case "listeners": // print the local ports of every LISTEN socket in /proc/net/tcp{,6}
		for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
			data, err := os.ReadFile(f)
			if err != nil {
				fmt.Printf("%s errno=%s\n", f, errnoName(err))
				continue
			}
			for _, line := range strings.Split(string(data), "\n")[1:] {
				fields := strings.Fields(line)
				if len(fields) > 3 && fields[3] == "0A" { // TCP_LISTEN
					_, port, _ := strings.Cut(fields[1], ":")
					n, _ := strconv.ParseUint(port, 16, 16)
					fmt.Printf("listen %d\n", n)
				}
			}
		}
		return 0, true
	case "env": // print the environment
		for _, kv := range os.Environ() {
			fmt.Println(kv)
		}
		return 0, true
	case "proxyecho": // proxyecho VAR: send "ping" to the host:port of $VAR, expect "pong"
		return report("proxyecho", proxyEcho(os.Getenv(args[1]))), true
	case "innerloop": // listen on the namespace's loopback and talk to ourselves
		return report("innerloop", innerLoop()), true
	}
	return 0, false
}

// proxyEcho connects to the host and port of a proxy URL and exchanges
// "ping" for "pong".
func proxyEcho(rawURL string) error {
	_, hostPort, ok := strings.Cut(rawURL, "://")
	if !ok {
		return fmt.Errorf("bad proxy url %q", rawURL)
	}
	c, err := net.DialTimeout("tcp", hostPort, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("ping")); err != nil {
		return err
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(c, buf); err != nil {
		return err
	}
	if string(buf) != "pong" {
		return fmt.Errorf("got %q", buf)
	}
	return nil
}

// innerLoop listens on 127.0.0.1:0 and exchanges a byte with itself.
func innerLoop() error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer l.Close()
	errc := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			_, err = c.Write([]byte("x"))
			c.Close()
		}
		errc <- err
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		return err
	}
	defer c.Close()
	buf := make([]byte, 1)
	if _, err := io.ReadFull(c, buf); err != nil {
		return err
	}
	return <-errc
}

// netlinkDump opens a route netlink socket and asks for the links: what
// `ip link` does.
func netlinkDump() error {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	_, err = syscall.NetlinkRIB(unix.RTM_GETLINK, unix.AF_UNSPEC)
	return err
}

// proxiedPlan is workspace-write on root with the network through the
// proxy: both routes, or HTTP alone without socks.
func proxiedPlan(root string, socks bool, argv ...string) sandbox.Plan {
	p := workspacePlan(root, true, argv...)
	p.NewNetNS = true
	p.Env = append(slices.Clone(p.Env), "GORACE=atexit_sleep_ms=0") // the command is the race-built test binary
	p.Seccomp = sandbox.SeccompProxied
	p.Proxy = &sandbox.ProxyPlan{Routes: []string{sandbox.RouteHTTP}}
	if socks {
		p.Proxy.Routes = append(p.Proxy.Routes, sandbox.RouteSOCKS5)
	}
	return p
}

// proxiedRun is a run of a proxied plan: its output and what the server
// end saw.
type proxiedRun struct {
	runResult
	routes []string // the routes received, in order
	ports  map[string]int
	echoed int // connections that exchanged ping/pong
}

// runProxied runs plan (which has Proxy) the way the server does: it
// starts the helper, takes the listeners (ProxyListeners) and answers
// "pong" to "ping" on each until the command ends, then closes them.
func runProxied(t *testing.T, plan sandbox.Plan) proxiedRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	plan.RecordIdentities()
	w, err := sandbox.Wrap(plan)
	if err != nil {
		t.Fatalf("Wrap: %v", err)
	}
	cmd := w.Command(ctx)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	startErr := cmd.Start()
	w.Close()
	ls, lerr := w.ProxyListeners(ctx)
	if startErr != nil {
		t.Fatalf("start: %v (listeners: %v)", startErr, lerr)
	}
	res := proxiedRun{ports: map[string]int{}}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, l := range ls {
		res.routes = append(res.routes, l.Route)
		res.ports[l.Route] = l.Listener.Addr().(*net.TCPAddr).Port
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c, err := l.Listener.Accept()
				if err != nil {
					return
				}
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				buf := make([]byte, 4)
				if _, err := io.ReadFull(c, buf); err == nil && string(buf) == "ping" {
					if _, err := c.Write([]byte("pong")); err == nil {
						mu.Lock()
						res.echoed++
						mu.Unlock()
					}
				}
				c.Close()
			}
		}()
	}
	err = cmd.Wait()
	for _, l := range ls {
		l.Listener.Close()
	}
	wg.Wait()
	res.runResult = runResult{code: helperExitCode(t, cmd, err), stdout: stdout.String(), stderr: stderr.String()}
	if lerr != nil {
		t.Logf("ProxyListeners: %v", lerr)
		res.code = -1
	}
	return res
}

// hostAddrs are the host's own non-loopback addresses (IPv4, IPv6 global
// or ULA, IPv6 link-local with its zone): traffic to them stays on the
// host, through its loopback.
func hostAddrs(t *testing.T) (v4, v6, linkLocal []string) {
	t.Helper()
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range ifs {
		if i.Flags&net.FlagLoopback != 0 || i.Flags&net.FlagUp == 0 {
			continue
		}
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			ip, _, _ := net.ParseCIDR(a.String())
			switch {
			case ip.To4() != nil:
				v4 = append(v4, ip.String())
			case ip.IsLinkLocalUnicast():
				linkLocal = append(linkLocal, ip.String()+"%"+i.Name)
			default:
				v6 = append(v6, ip.String())
			}
		}
	}
	return v4, v6, linkLocal
}

// hostListener is a TCP listener of the test on the host (all addresses
// of network, "tcp4" or "tcp6") that counts the connections it accepts.
type hostListener struct {
	l    net.Listener
	port int
	mu   sync.Mutex
	hits int
}

func newHostListener(t *testing.T, network, addr string) *hostListener {
	t.Helper()
	l, err := net.Listen(network, addr)
	if err != nil {
		t.Skipf("listen %s %s: %v", network, addr, err)
	}
	h := &hostListener{l: l, port: l.Addr().(*net.TCPAddr).Port}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			h.mu.Lock()
			h.hits++
			h.mu.Unlock()
			c.Close()
		}
	}()
	t.Cleanup(func() { l.Close(); <-done })
	return h
}

func (h *hostListener) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.hits
}

// TestProxiedAttacks is the attack test of the proxied network
// (docs/sandbox.md §4.9): from inside a proxied command, every way out
// but the proxy fails — TCP and UDP to the host's own addresses (IPv4,
// IPv6, link-local) and to its loopback (the server's own listener), raw,
// packet, netlink and SCTP sockets, Unix sockets by path and by abstract
// name, the host's listeners in /proc/net/tcp — while the proxy's
// listeners answer, socketpairs work and the command may listen on its
// own loopback.
func TestProxiedAttacks(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	root := testDir(t)
	openPath(t, root)
	v4, v6, ll := hostAddrs(t)

	// The server's own listeners, on every host address.
	any4 := newHostListener(t, "tcp4", "0.0.0.0:0")
	lo4 := newHostListener(t, "tcp4", "127.0.0.1:0")
	any6 := newHostListener(t, "tcp6", "[::]:0")
	// A host Unix socket by path and by abstract name, and a UDP
	// "resolver" on every host address.
	sockPath := filepath.Join(root, "host.sock")
	abstract := fmt.Sprintf("@codex-proxied-test-%d", os.Getpid())
	for _, name := range []string{sockPath, abstract} {
		ul, err := net.Listen("unix", name)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				c, err := ul.Accept()
				if err != nil {
					return
				}
				_, _ = c.Write([]byte("host\n"))
				c.Close()
			}
		}()
		t.Cleanup(func() { ul.Close(); <-done })
	}
	udp, err := net.ListenPacket("udp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { udp.Close() })
	udpPort := strconv.Itoa(udp.LocalAddr().(*net.UDPAddr).Port)

	type attack struct {
		name string
		args []string
		want string // the line the command prints
	}
	attacks := []attack{
		{"host loopback tcp", []string{"tcpsend", "127.0.0.1:" + strconv.Itoa(lo4.port)}, "tcpsend errno=ECONNREFUSED"},
		{"host ::1 tcp", []string{"tcpsend", "[::1]:" + strconv.Itoa(any6.port)}, "tcpsend errno=ECONNREFUSED"},
		{"host loopback udp (resolver)", []string{"udp", "127.0.0.1:" + udpPort}, "ok"}, // sent into the namespace's own lo: checked below
		{"raw socket", []string{"raw4"}, "raw4 errno=EPERM"},
		{"raw6 socket", []string{"raw6"}, "raw6 errno=EPERM"},
		{"packet socket", []string{"packet"}, "packet errno=EPERM"},
		{"netlink socket", []string{"netlink"}, "netlink errno=EPERM"},
		{"sctp socket", []string{"sctp"}, "sctp errno=EPERM"},
		{"unix socket by path", []string{"unixdial", sockPath}, "unixdial errno=EPERM"},
		{"abstract unix socket", []string{"unixdial", abstract}, "unixdial errno=EPERM"},
		{"vsock", []string{"vsock"}, "vsock errno=EPERM"},
		{"socketpair", []string{"socketpair"}, "ok"},
		{"own loopback", []string{"innerloop"}, "ok"},
		{"http route", []string{"proxyecho", "HTTP_PROXY"}, "ok"},
		{"socks route", []string{"proxyecho", "ALL_PROXY"}, "ok"},
	}
	for _, a := range v4 {
		attacks = append(attacks,
			attack{"host " + a + " tcp", []string{"tcpsend", net.JoinHostPort(a, strconv.Itoa(any4.port))}, "tcpsend errno=ENETUNREACH"},
			attack{"host " + a + " udp (resolver)", []string{"udp", net.JoinHostPort(a, udpPort)}, "udp errno=ENETUNREACH"})
	}
	for _, a := range v6 {
		attacks = append(attacks, attack{"host " + a + " tcp", []string{"tcpsend", net.JoinHostPort(a, strconv.Itoa(any6.port))}, "tcpsend errno=ENETUNREACH"})
	}
	for _, a := range ll {
		// The zone names a host interface, which the namespace lacks.
		attacks = append(attacks, attack{"host " + a + " tcp", []string{"tcpsend", net.JoinHostPort(a, strconv.Itoa(any6.port))}, "tcpsend errno="})
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			r := runProxied(t, helperPlan(t, proxiedPlan(root, true), a.args...))
			if !strings.HasPrefix(r.stdout, a.want) {
				t.Errorf("want %q: %v", a.want, r.runResult)
			}
		})
	}
	if n := any4.count() + lo4.count() + any6.count(); n != 0 {
		t.Errorf("the host's listeners accepted %d connections from inside", n)
	}
	_ = udp.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if n, from, err := udp.ReadFrom(make([]byte, 16)); err == nil {
		t.Errorf("the host's resolver got %d bytes from %v", n, from)
	}

	// /proc/net/tcp lists the proxy's two listeners and nothing of the host.
	r := runProxied(t, helperPlan(t, proxiedPlan(root, true), "listeners"))
	var got []int
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if p, ok := strings.CutPrefix(line, "listen "); ok {
			n, _ := strconv.Atoi(p)
			got = append(got, n)
		}
	}
	slices.Sort(got)
	want := []int{r.ports[sandbox.RouteHTTP], r.ports[sandbox.RouteSOCKS5]}
	slices.Sort(want)
	if r.code != 0 || !slices.Equal(got, want) {
		t.Errorf("listeners inside %v, want the proxy's %v: %v", got, want, r.runResult)
	}
}

// TestProxiedEcho: a connection to the listener of each route inside
// reaches the listener the server received, and bytes go both ways.
func TestProxiedEcho(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	root := testDir(t)
	r := runProxied(t, helperPlan(t, proxiedPlan(root, true), "proxyecho", "HTTP_PROXY"))
	if r.code != 0 || r.echoed != 1 || !slices.Equal(r.routes, []string{"http", "socks5"}) {
		t.Fatalf("echo through the http route: echoed %d, routes %v: %v", r.echoed, r.routes, r.runResult)
	}
}

// TestProxiedUnixAllowed: with every Unix socket allowed
// (SeccompProxiedUnix) a host socket by path answers, while an abstract
// one stays out of reach (abstract names belong to the network
// namespace).
func TestProxiedUnixAllowed(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	root := testDir(t)
	sockPath := filepath.Join(root, "host.sock")
	abstract := fmt.Sprintf("@codex-proxied-unix-%d", os.Getpid())
	for _, name := range []string{sockPath, abstract} {
		ul, err := net.Listen("unix", name)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				c, err := ul.Accept()
				if err != nil {
					return
				}
				_, _ = c.Write([]byte("host\n"))
				c.Close()
			}
		}()
		t.Cleanup(func() { ul.Close(); <-done })
	}
	p := proxiedPlan(root, true)
	p.Seccomp = sandbox.SeccompProxiedUnix
	if r := runProxied(t, helperPlan(t, p, "unixdial", sockPath)); r.stdout != "ok\n" {
		t.Errorf("by path: %v", r.runResult)
	}
	if r := runProxied(t, helperPlan(t, p, "unixdial", abstract)); r.stdout != "unixdial errno=ECONNREFUSED\n" {
		t.Errorf("abstract: %v", r.runResult)
	}
}

// TestProxiedEnv: the command sees the proxy variables of docs/sandbox.md
// §4.9 with the ports of the listeners the server received, whatever the
// caller set for those names; with HTTP alone ALL_PROXY is the HTTP URL;
// with local binding NO_PROXY lists the private ranges.
func TestProxiedEnv(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	root := testDir(t)
	for _, tc := range []struct {
		name         string
		socks, local bool
	}{{"socks", true, false}, {"http only, local binding", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			p := helperPlan(t, proxiedPlan(root, tc.socks), "env")
			p.Proxy.AllowLocalBinding = tc.local
			p.Env = append(slices.Clone(p.Env), "HTTP_PROXY=http://evil:1", "no_proxy=*", "KEEP=1", "CODEX_NETWORK_PROXY_ACTIVE=0")
			r := runProxied(t, p)
			if r.code != 0 {
				t.Fatal(r.runResult)
			}
			env := map[string][]string{}
			for _, kv := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
				k, v, _ := strings.Cut(kv, "=")
				env[k] = append(env[k], v)
			}
			httpURL := "http://127.0.0.1:" + strconv.Itoa(r.ports["http"])
			allURL := httpURL
			if tc.socks {
				allURL = "socks5h://127.0.0.1:" + strconv.Itoa(r.ports["socks5"])
			}
			noProxy, local := "", "0"
			if tc.local {
				noProxy, local = "localhost,127.0.0.1,::1,10.0.0.0/8,172.16.0.0/12,192.168.0.0/16", "1"
			}
			want := map[string]string{"KEEP": "1", "CODEX_NETWORK_PROXY_ACTIVE": "1", "CODEX_NETWORK_ALLOW_LOCAL_BINDING": local,
				"NODE_USE_ENV_PROXY": "1", "ELECTRON_GET_USE_PROXY": "true"}
			for _, k := range strings.Fields("HTTP_PROXY HTTPS_PROXY http_proxy https_proxy WS_PROXY WSS_PROXY ws_proxy wss_proxy " +
				"YARN_HTTP_PROXY YARN_HTTPS_PROXY NPM_CONFIG_PROXY NPM_CONFIG_HTTP_PROXY NPM_CONFIG_HTTPS_PROXY npm_config_proxy " +
				"npm_config_http_proxy npm_config_https_proxy BUNDLE_HTTP_PROXY BUNDLE_HTTPS_PROXY PIP_PROXY DOCKER_HTTP_PROXY DOCKER_HTTPS_PROXY") {
				want[k] = httpURL
			}
			for _, k := range strings.Fields("ALL_PROXY all_proxy FTP_PROXY ftp_proxy") {
				want[k] = allURL
			}
			for _, k := range strings.Fields("NO_PROXY no_proxy NPM_CONFIG_NOPROXY npm_config_noproxy BUNDLE_NO_PROXY") {
				want[k] = noProxy
			}
			for k, v := range want {
				if got := env[k]; len(got) != 1 || got[0] != v {
					t.Errorf("%s = %q, want [%q]", k, got, v)
				}
			}
			if _, ok := env["CODEX_SANDBOX_NETWORK_DISABLED"]; ok {
				t.Error("a proxied command has CODEX_SANDBOX_NETWORK_DISABLED")
			}
		})
	}
}

// TestProxiedCommandHoldsNoListener: the command's fds are 0-2 only; the
// listeners and the control socket stayed with the helper and the server.
func TestProxiedCommandHoldsNoListener(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	p := helperPlan(t, proxiedPlan(testDir(t), true), "fds")
	p.Env = append(slices.Clone(p.Env), "GODEBUG=containermaxprocs=0,updatemaxprocs=0")
	r := runProxied(t, p)
	if r.code != 0 {
		t.Fatal(r.runResult)
	}
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		fd, _, _ := strings.Cut(line, " ")
		if n, _ := strconv.Atoi(fd); n > 2 {
			t.Errorf("the command holds fd %s", line)
		}
	}
}

// openFDs counts the test process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestProxyListenersHelperDies: a helper that ends without sending its
// listeners (here a plan it refuses) gives an error at once, never a
// hang, and no descriptor is left open.
func TestProxyListenersHelperDies(t *testing.T) {
	requireSandbox(t)
	before := openFDs(t)
	p := proxiedPlan(testDir(t), true, "true")
	p.Refusal = "refused for the test"
	w, err := sandbox.Wrap(p)
	if err != nil {
		t.Fatal(err)
	}
	cmd := w.Command(t.Context())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	start := time.Now()
	ls, err := w.ProxyListeners(t.Context())
	if err == nil || len(ls) != 0 || time.Since(start) > 10*time.Second {
		t.Errorf("ProxyListeners = %v, %v after %v", ls, err, time.Since(start))
	}
	_ = cmd.Wait()
	if !strings.Contains(stderr.String(), "refused for the test") {
		t.Errorf("stderr %q", stderr.String())
	}
	if _, err := w.ProxyListeners(t.Context()); err != sandbox.ErrNotProxied {
		t.Errorf("second call: %v", err)
	}
	if after := openFDs(t); after != before {
		t.Errorf("open fds %d, before %d", after, before)
	}
}

// TestProxiedRefusals: the helper refuses to run a proxied command
// without what isolates it.
func TestProxiedRefusals(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	root := testDir(t)
	noFilter := proxiedPlan(root, true, "true")
	noFilter.Seccomp = sandbox.SeccompVMSocketRestricted
	if _, err := sandbox.Wrap(noFilter); err == nil {
		t.Error("Wrap took a proxied plan with the network-on filter")
	}
	badFD := proxiedPlan(root, true, "true")
	badFD.ProxyFD = 9
	if _, err := sandbox.Wrap(badFD); err == nil {
		t.Error("Wrap took a proxy fd out of place")
	}
	noProxy := workspacePlan(root, true, "true")
	noProxy.Seccomp = sandbox.SeccompProxied
	if _, err := sandbox.Wrap(noProxy); err == nil {
		t.Error("Wrap took the proxied filter without a proxy")
	}
}
