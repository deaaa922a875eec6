package netproxy

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"
)

// Request is what a decision is about: one connection the command asked
// the proxy to make.
type Request struct {
	Protocol string // "http", "https_connect" or "socks5_tcp"
	Host     string // normalised: lower-case, no trailing dot, no brackets
	Port     int
	Method   string // the HTTP method; "CONNECT"; empty for SOCKS5
	Client   string // ip:port of the command's side of the connection
}

// Outcome is a decision's verdict. Reason is "allow", "not_allowed",
// "denied", "not_allowed_local" or "method_not_allowed"; Source is
// "baseline_policy", "mode_guard" or "decider". A request the reviewer
// allowed has Allowed, Reason "not_allowed", Source "decider" and
// PolicyOverride.
type Outcome struct {
	Allowed        bool
	Reason         string
	Source         string
	PolicyOverride bool
}

// Event is one decision, as Options.OnDecision receives it.
type Event struct {
	Request
	Outcome
	Time time.Time
}

// Reasons and sources of an Outcome.
const (
	ReasonAllow            = "allow"
	ReasonNotAllowed       = "not_allowed"
	ReasonDenied           = "denied"
	ReasonNotAllowedLocal  = "not_allowed_local"
	ReasonMethodNotAllowed = "method_not_allowed"

	SourceBaseline = "baseline_policy"
	SourceMode     = "mode_guard"
	SourceDecider  = "decider"
)

// Options configure a Proxy.
type Options struct {
	// Policy is the compiled Settings; nil denies every host.
	Policy *Policy
	// Review, when set, is asked about a host that is only not_allowed
	// (never a denied or local one, nor a method refusal) and returns true
	// to allow it. The caller bounds its time; ctx is cancelled when the
	// proxy closes or the client's connection drops. Nil denies.
	Review func(ctx context.Context, r Request) bool
	// OnDecision receives every decision, synchronously, on the
	// connection's goroutine: it must not block.
	OnDecision func(Event)
	// Logger gets one info record per decision; nil discards. Credentials
	// (Proxy-Authorization, URL user info, paths and queries) are never
	// logged.
	Logger *slog.Logger
	// Resolve looks a name up; nil uses net.DefaultResolver. Every
	// address it returns must pass the local rule, and only those
	// addresses are dialled.
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	// Dial connects to one checked address; nil uses a net.Dialer with
	// DialTimeout.
	Dial func(ctx context.Context, network string, addr netip.AddrPort) (net.Conn, error)
	// MaxConns caps the live client connections of the proxy (both
	// listeners); 0 means DefaultMaxConns. A connection over the cap is
	// closed at once.
	MaxConns int
	// HandshakeTimeout bounds reading a request's head (HTTP request line
	// and headers, SOCKS5 greeting and request); 0 means
	// DefaultHandshakeTimeout. IdleTimeout bounds the wait for the next
	// request on a kept-alive HTTP connection; 0 means DefaultIdleTimeout.
	// An established tunnel has no idle limit: it ends with either side
	// or with Close.
	HandshakeTimeout, IdleTimeout time.Duration
	// Upstreams, when set, holds the local address of each live upstream
	// connection, from its connect until the proxy closes it, for the
	// peer check of the server running the proxy (see Upstreams).
	Upstreams *Upstreams
}

// Bounds of a proxy.
const (
	DefaultMaxConns         = 256
	DefaultHandshakeTimeout = 30 * time.Second
	DefaultIdleTimeout      = 60 * time.Second
	DialTimeout             = 10 * time.Second // the default dialer's
	MaxHeaderBytes          = 64 << 10         // an HTTP request's head
)

// Proxy is one command's proxy: the listeners it serves and every live
// connection, all ended by Close.
type Proxy struct {
	o      Options
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	closed    bool
	listeners []net.Listener
	conns     map[net.Conn]struct{}
	upstreams map[net.Conn]upstreamEnds // in o.Upstreams
	clients   int
	wg        sync.WaitGroup
}

// New returns a proxy serving nothing yet.
func New(o Options) *Proxy {
	if o.Policy == nil {
		o.Policy = &Policy{}
	}
	if o.MaxConns <= 0 {
		o.MaxConns = DefaultMaxConns
	}
	if o.HandshakeTimeout <= 0 {
		o.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Proxy{o: o, log: log, ctx: ctx, cancel: cancel, conns: map[net.Conn]struct{}{}}
}

// ServeHTTP serves the HTTP proxy (absolute-form requests and CONNECT) on
// l and returns at once; the proxy owns l from now on.
func (p *Proxy) ServeHTTP(l net.Listener) { p.serve(l, p.handleHTTP) }

// ServeSOCKS5 serves the SOCKS5 proxy (CONNECT, no authentication) on l
// and returns at once; the proxy owns l from now on.
func (p *Proxy) ServeSOCKS5(l net.Listener) { p.serve(l, p.handleSOCKS5) }

// Routes: what a listener handed to Serve is for.
const (
	RouteHTTP   = "http"
	RouteSOCKS5 = "socks5"
)

// Serve serves l as route says: RouteHTTP with ServeHTTP, RouteSOCKS5 with
// ServeSOCKS5. A listener of any other route is closed.
func (p *Proxy) Serve(route string, l net.Listener) {
	switch route {
	case RouteHTTP:
		p.ServeHTTP(l)
	case RouteSOCKS5:
		p.ServeSOCKS5(l)
	default:
		_ = l.Close()
	}
}

func (p *Proxy) serve(l net.Listener, handle func(net.Conn)) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		l.Close()
		return
	}
	p.listeners = append(p.listeners, l)
	p.wg.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.wg.Done()
		var backoff time.Duration
		for {
			c, err := l.Accept()
			if err != nil {
				if p.isClosed() || errors.Is(err, net.ErrClosed) {
					if !p.isClosed() {
						p.log.Warn("network proxy listener closed under the proxy", "addr", l.Addr().String())
					}
					return
				}
				// Out of descriptors or the like: wait and try again,
				// as net/http does, rather than stop serving.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				p.log.Warn("network proxy accept failed", "addr", l.Addr().String(), "err", err, "retry_in", backoff)
				select {
				case <-time.After(backoff):
				case <-p.ctx.Done():
					return
				}
				continue
			}
			backoff = 0
			if !p.admit(c) {
				c.Close()
				continue
			}
			go func() {
				defer p.wg.Done()
				defer p.release(c)
				handle(c)
			}()
		}
	}()
}

func (p *Proxy) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// admit registers a client connection, or refuses it when the proxy is
// closed or at its cap. On success the caller's goroutine is counted.
func (p *Proxy) admit(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.clients >= p.o.MaxConns {
		if !p.closed {
			p.log.Warn("network proxy connection refused: too many connections", "max", p.o.MaxConns)
		}
		return false
	}
	p.clients++
	p.conns[c] = struct{}{}
	p.wg.Add(1)
	return true
}

func (p *Proxy) release(c net.Conn) {
	c.Close()
	p.mu.Lock()
	p.clients--
	delete(p.conns, c)
	p.mu.Unlock()
}

// track registers an upstream connection so Close ends it too, and
// records its local address in o.Upstreams before anything is sent on it;
// it reports false (and closes c) when the proxy is already closed.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	if a, ok := p.o.Upstreams.add(c); ok {
		if p.upstreams == nil {
			p.upstreams = map[net.Conn]upstreamEnds{}
		}
		p.upstreams[c] = a
	}
	return true
}

// untrack closes an upstream connection and forgets it; its address
// leaves o.Upstreams once it is closed.
func (p *Proxy) untrack(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	a, ok := p.upstreams[c]
	delete(p.upstreams, c)
	p.mu.Unlock()
	if ok {
		p.o.Upstreams.remove(a)
	}
}

// Close closes the listeners and every live connection and waits for
// every goroutine of the proxy. It is safe to call more than once.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		p.cancel()
		for _, l := range p.listeners {
			l.Close()
		}
		for c := range p.conns {
			c.Close()
		}
	}
	p.mu.Unlock()
	p.wg.Wait()
	return nil
}

// decision is a request's outcome together with the addresses to dial
// when it is allowed.
type decision struct {
	Outcome
	addrs []netip.Addr
	// unresolved is set when an allowed name had no address and local
	// names are allowed: an upstream failure, not a policy refusal.
	unresolved bool
}

// decide runs the whole policy on r: the baseline (deny wins, local
// literals), the limited mode's method guard, the review of a host that
// is only not allowed, then the lookup whose every address must pass the
// local rule. It reports the decision (OnDecision, log) before returning.
// watch, asked only when a review is due, returns a context ended when
// the client goes away or the proxy closes, and its stop function.
func (p *Proxy) decide(r Request, watch func() (context.Context, func())) decision {
	d := p.evaluate(r, watch)
	p.report(r, d.Outcome)
	return d
}

func (p *Proxy) evaluate(r Request, watch func() (context.Context, func())) decision {
	ctx := p.ctx
	pol := p.o.Policy
	v, lit := pol.judge(r.Host)
	switch v {
	case vDenied:
		return decision{Outcome: Outcome{Reason: ReasonDenied, Source: SourceBaseline}}
	case vLocal:
		return decision{Outcome: Outcome{Reason: ReasonNotAllowedLocal, Source: SourceBaseline}}
	}
	if pol.limited && !methodSafe(r) {
		return decision{Outcome: Outcome{Reason: ReasonMethodNotAllowed, Source: SourceMode}}
	}
	out := Outcome{Allowed: true, Reason: ReasonAllow, Source: SourceBaseline}
	if v == vNotAllowed {
		if p.o.Review == nil {
			return decision{Outcome: Outcome{Reason: ReasonNotAllowed, Source: SourceBaseline}}
		}
		rctx, stop := watch()
		ok := p.o.Review(rctx, r) && rctx.Err() == nil
		stop()
		if !ok {
			return decision{Outcome: Outcome{Reason: ReasonNotAllowed, Source: SourceDecider}}
		}
		out = Outcome{Allowed: true, Reason: ReasonNotAllowed, Source: SourceDecider, PolicyOverride: true}
		if lit.IsValid() {
			v = vAllowLiteral
		} else {
			v = vAllowName
		}
	}
	if v == vAllowLiteral {
		return decision{Outcome: out, addrs: []netip.Addr{lit}}
	}
	addrs, err := p.resolve(ctx, r.Host)
	if err != nil || len(addrs) == 0 {
		if pol.allowLocal {
			return decision{Outcome: out, unresolved: true}
		}
		return decision{Outcome: Outcome{Reason: ReasonNotAllowedLocal, Source: out.Source}}
	}
	if !pol.allowLocal {
		for _, a := range addrs {
			if isLocal(a) {
				return decision{Outcome: Outcome{Reason: ReasonNotAllowedLocal, Source: out.Source}}
			}
		}
	}
	return decision{Outcome: out, addrs: addrs}
}

// methodSafe reports whether r passes the limited mode: GET, HEAD and
// OPTIONS of plain HTTP. CONNECT is refused there because the tunnel's
// requests cannot be method-checked without terminating TLS, which this
// proxy does not do ([ours]: the reference intercepts it with a CA it
// generates; we would rather refuse than hold a CA for the command).
// SOCKS5 carries no method and is refused as the reference does.
func methodSafe(r Request) bool {
	if r.Protocol != "http" {
		return false
	}
	switch r.Method {
	case "GET", "HEAD", "OPTIONS":
		return true
	}
	return false
}

func (p *Proxy) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	var addrs []netip.Addr
	var err error
	if p.o.Resolve != nil {
		addrs, err = p.o.Resolve(ctx, host)
	} else {
		addrs, err = net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	}
	for i, a := range addrs {
		addrs[i] = a.Unmap()
	}
	return addrs, err
}

func (p *Proxy) report(r Request, o Outcome) {
	if p.o.OnDecision != nil {
		p.o.OnDecision(Event{Request: r, Outcome: o, Time: time.Now()})
	}
	if o.Allowed {
		p.log.Info("network proxy request allowed", "protocol", r.Protocol, "host", r.Host, "port", r.Port,
			"method", r.Method, "client", r.Client, "source", o.Source)
		return
	}
	p.log.Info("network proxy request blocked", "protocol", r.Protocol, "host", r.Host, "port", r.Port,
		"method", r.Method, "client", r.Client, "reason", o.Reason, "source", o.Source)
}

// dial connects to the first of the checked addresses that answers; no
// name is looked up again. The connection is tracked so Close ends it.
func (p *Proxy) dial(ctx context.Context, addrs []netip.Addr, port int) (net.Conn, error) {
	var last error = errNoAddress
	for _, a := range addrs {
		ap := netip.AddrPortFrom(a, uint16(port))
		var c net.Conn
		var err error
		if p.o.Dial != nil {
			c, err = p.o.Dial(ctx, "tcp", ap)
		} else {
			d := net.Dialer{Timeout: DialTimeout}
			c, err = d.DialContext(ctx, "tcp", ap.String())
		}
		if err == nil {
			if !p.track(c) {
				return nil, net.ErrClosed
			}
			return c, nil
		}
		last = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, last
}

// pipe copies both ways between the client and the upstream until both
// directions end, passing each end-of-stream on as a half-close. Between
// two *net.TCPConn io.Copy splices. An error in one direction ends both.
func pipe(client, up net.Conn) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		halfCopy(up, client)
	}()
	halfCopy(client, up)
	<-done
}

func halfCopy(dst, src net.Conn) {
	_, err := io.Copy(dst, src)
	if err == nil {
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			if cw.CloseWrite() == nil {
				return
			}
		}
	}
	dst.Close()
	src.Close()
}
