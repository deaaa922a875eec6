package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// The proxy group (issue 21, docs/benchmarking.md §3 #P1–#P3): the costs of
// the managed network proxy, ours and the reference's in one run. Each
// server runs as `exec-server --listen stdio` inside its own network test
// bed (proxybed.go) and gets the same process/start: a workspace-write
// sandbox with the network on, `networkProxy` allowing only the bed's
// destination and `enforceManagedNetwork: true`. The measuring client is
// this binary (`netclient`, proxyclient.go), run as the sandboxed command,
// so the same code measures both proxies.
//
//	#P1 one GET on a new connection through the proxy, minus the same
//	    client's direct GET (an unsandboxed command, no proxy): the added
//	    latency, p50 and p90.
//	#P2 a 100 MiB GET through the proxy (floor: the same GET direct).
//	#P3 process/start → process/closed of /bin/true with the network on
//	    and no proxy asked, with a proxy asked, and with #11's sandbox.
//
// A server that gives the command no HTTP_PROXY does not serve
// networkProxy: its proxied rows are reported as not served.

const (
	proxyBulkSize = 100 << 20
	proxyTimeout  = 120 * time.Second
)

// proxyPermissions is #11's workspace-write profile with the network on.
var proxyPermissions = strings.Replace(workspaceWritePermissions, `"network":"restricted"`, `"network":"enabled"`, 1)

// proxyRequest is the networkProxy member every proxied start carries:
// full mode, SOCKS5 on, only the bed's destination allowed.
var proxyRequest = map[string]any{"proxy": map[string]any{
	"enabled": true, "enableSocks5": true, "enableSocks5Udp": false, "allowUpstreamProxy": false,
	"dangerouslyAllowAllUnixSockets": false, "mode": "full", "allowLocalBinding": false,
	"domains": map[string]string{netBedHost: "allow"},
}}

// proxyStartParams is process/start with the managed-network members.
type proxyStartParams struct {
	StartParams
	NetworkProxy          any  `json:"networkProxy,omitempty"`
	EnforceManagedNetwork bool `json:"enforceManagedNetwork"`
}

// ProxyLatency summarises request latencies in milliseconds, with p90 and
// the p50 and p90 of each round.
type ProxyLatency struct {
	N        int       `json:"n"`
	Min      float64   `json:"min_ms"`
	P50      float64   `json:"p50_ms"`
	P90      float64   `json:"p90_ms"`
	Max      float64   `json:"max_ms"`
	RoundP50 []float64 `json:"round_p50_ms,omitempty"`
	RoundP90 []float64 `json:"round_p90_ms,omitempty"`
	Raw      []float64 `json:"raw_ms,omitempty"`
	Error    string    `json:"error,omitempty"`
}

// MarshalJSON drops the raw samples when omitRaw is set (the stdout summary).
func (l ProxyLatency) MarshalJSON() ([]byte, error) {
	type plain ProxyLatency
	p := plain(l)
	if omitRaw {
		p.Raw = nil
	}
	return json.Marshal(p)
}

// addRound adds one round's samples.
func (l *ProxyLatency) addRound(raw []float64) {
	if len(raw) == 0 {
		return
	}
	s := sorted(raw)
	l.RoundP50 = append(l.RoundP50, round3(quantile(s, 0.5)))
	l.RoundP90 = append(l.RoundP90, round3(quantile(s, 0.9)))
	for _, v := range raw {
		l.Raw = append(l.Raw, round3(v))
	}
	all := sorted(l.Raw)
	l.N = len(all)
	l.Min, l.P50, l.P90, l.Max = all[0], quantile(all, 0.5), quantile(all, 0.9), all[len(all)-1]
}

func sorted(v []float64) []float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s
}

// ProxyMetrics are one server's proxy-group measurements.
type ProxyMetrics struct {
	Served    bool   `json:"served"`
	NotServed string `json:"not_served,omitempty"` // why the proxied rows are missing
	// DirectFromSandbox is what a direct TCP connect to the destination
	// gave the proxied command ("ok" would mean the proxy is advisory).
	DirectFromSandbox string        `json:"direct_connect_from_proxied_command,omitempty"`
	Request           *ProxyLatency `json:"request_through_proxy,omitempty"`
	Bulk              *Throughput   `json:"bulk_through_proxy,omitempty"`
	StartNoProxy      *Latency      `json:"start_closed_network_on_no_proxy,omitempty"`
	StartProxy        *Latency      `json:"start_closed_with_proxy,omitempty"`
	StartSandbox11    *Latency      `json:"start_closed_sandbox_11,omitempty"` // #11's sandbox (network off)
}

// proxyProc is one process started through a proxyServer.
type proxyProc struct {
	sent     time.Time
	closedAt time.Time
	stdout   bytes.Buffer
	stderr   bytes.Buffer
	exit     *int
	closed   chan struct{}
}

// proxyServer is one server under test in its bed, over stdio, with the
// processes it runs.
type proxyServer struct {
	t  *Target
	c  *StdioClient
	ws string // the sandbox's workspace

	mu    sync.Mutex
	procs map[string]*proxyProc
}

// startProxyServer starts t's binary in a fresh bed and does the handshake.
func (b *Bench) startProxyServer(ctx context.Context, t *Target) (*proxyServer, error) {
	label := t.Role + "-proxy"
	dir := filepath.Join(b.scratch, label)
	ws := filepath.Join(dir, "workspace")
	codexHome := filepath.Join(dir, "codex-home")
	for _, d := range []string{ws, codexHome} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	cmd, err := netBedCommand(dir, []string{t.Res.Binary, "exec-server", "--listen", "stdio"})
	if err != nil {
		return nil, err
	}
	home, _ := os.UserHomeDir()
	cmd.Env = append(cmd.Env, serverEnv(home, codexHome)...)
	c, err := startStdioCmd(label, cmd, b.scratch)
	if err != nil {
		return nil, err
	}
	s := &proxyServer{t: t, c: c, ws: ws, procs: map[string]*proxyProc{}}
	onNotify := s.notification
	c.onNotify.Store(&onNotify)
	hctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, _, err := c.Call(hctx, "initialize", map[string]any{"clientName": "bench"}); err != nil {
		c.Close()
		return nil, fmt.Errorf("%s: initialize: %w (stderr in %s)", label, err, filepath.Join(b.scratch, label+".stderr"))
	}
	if err := c.Notify("initialized", map[string]any{}); err != nil {
		c.Close()
		return nil, fmt.Errorf("%s: initialized: %w", label, err)
	}
	return s, nil
}

// notification routes a process notification line to its process.
func (s *proxyServer) notification(line []byte) {
	now := time.Now()
	var n struct {
		Method string `json:"method"`
		Params struct {
			ProcessID string `json:"processId"`
			Stream    string `json:"stream"`
			Chunk     []byte `json:"chunk"`
			ExitCode  *int   `json:"exitCode"`
		} `json:"params"`
	}
	if !bytes.HasPrefix(line, []byte(`{"method":"process/`)) || json.Unmarshal(line, &n) != nil {
		return // network/policyDecision and the like
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.procs[n.Params.ProcessID]
	if p == nil || !p.closedAt.IsZero() {
		return
	}
	switch n.Method {
	case "process/output":
		if n.Params.Stream == "stderr" {
			p.stderr.Write(n.Params.Chunk)
		} else {
			p.stdout.Write(n.Params.Chunk)
		}
	case "process/exited":
		p.exit = n.Params.ExitCode
	case "process/closed":
		p.closedAt = now
		close(p.closed)
	}
}

// run starts argv with the given sandbox (nil: none) and, with proxied,
// the networkProxy request, and waits for process/closed.
func (s *proxyServer) run(ctx context.Context, argv []string, sandbox any, proxied bool) (*proxyProc, error) {
	params := proxyStartParams{StartParams: StartParams{ProcessID: newProcessID(), Argv: argv, Cwd: fileURI(s.ws), Env: benchEnv, Sandbox: sandbox}}
	if proxied {
		params.NetworkProxy, params.EnforceManagedNetwork = proxyRequest, true
	}
	p := &proxyProc{closed: make(chan struct{})}
	s.mu.Lock()
	s.procs[params.ProcessID] = p
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.procs, params.ProcessID)
		s.mu.Unlock()
	}()
	ctx, cancel := context.WithTimeout(ctx, proxyTimeout)
	defer cancel()
	ch, sent, err := s.c.Send("process/start", params)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	p.sent = sent
	s.mu.Unlock()
	select {
	case r, ok := <-ch:
		if !ok {
			return nil, fatal(fmt.Errorf("%s: connection lost", s.c.Label))
		}
		if r.Err != nil {
			return nil, fmt.Errorf("process/start %v: %w", argv[0], r.Err)
		}
	case <-ctx.Done():
		return nil, fmt.Errorf("process/start %v: no answer within %v", argv[0], proxyTimeout)
	}
	select {
	case <-p.closed:
	case <-ctx.Done():
		tctx, tcancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _, _ = s.c.Call(tctx, "process/terminate", map[string]any{"processId": params.ProcessID})
		tcancel()
		return nil, fmt.Errorf("%v: no process/closed within %v", argv, proxyTimeout)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return p, nil
}

// proxySandbox is the sandbox of the proxied starts (network on).
func (s *proxyServer) proxySandbox() *SandboxObject {
	sb := workspaceSandbox(s.ws, "", false)
	sb.Permissions = json.RawMessage(proxyPermissions)
	return sb
}

// errNotServed marks a server that gave the proxied command no proxy.
var errNotServed = errors.New("process/start with networkProxy and enforceManagedNetwork gave the command no HTTP_PROXY")

// client runs the measuring client with args, proxied (in the sandbox,
// through the proxy) or direct (unsandboxed, no proxy), and decodes its
// line.
func (s *proxyServer) client(ctx context.Context, bin string, proxied bool, args ...string) (*NetClientResult, error) {
	argv := append([]string{bin, netClientCommand}, args...)
	var sb any
	if proxied {
		sb = s.proxySandbox()
	} else {
		argv = append(argv, "-direct")
	}
	p, err := s.run(ctx, argv, sb, proxied)
	if err != nil {
		return nil, err
	}
	if p.exit != nil && *p.exit == netClientNoProxy && proxied {
		return nil, fatal(errNotServed)
	}
	if p.exit == nil || *p.exit != 0 {
		return nil, fmt.Errorf("netclient %v: exit %v, stderr %q, stdout %q", args, p.exit, strings.TrimSpace(p.stderr.String()), p.stdout.String())
	}
	var res NetClientResult
	if err := json.Unmarshal(p.stdout.Bytes(), &res); err != nil {
		return nil, fmt.Errorf("netclient %v: output %q: %w", args, p.stdout.String(), err)
	}
	return &res, nil
}

// trueSampler times /bin/true start→closed with #11's sandbox (sandbox11),
// or with the network on, with or without a proxy.
func (s *proxyServer) trueSampler(sandbox11, proxied bool) sampler {
	return func(ctx context.Context) ([]time.Duration, error) {
		sb := s.proxySandbox()
		if sandbox11 {
			sb = workspaceSandbox(s.ws, "", false)
		}
		p, err := s.run(ctx, []string{"/bin/true"}, sb, proxied)
		if err != nil {
			return nil, err
		}
		if p.exit == nil || *p.exit != 0 {
			return nil, fmt.Errorf("sandboxed /bin/true: exit %v, stderr %q", p.exit, p.stderr.String())
		}
		return []time.Duration{p.closedAt.Sub(p.sent)}, nil
	}
}

// copyClient copies this binary to dir (readable inside every sandbox; a
// `go run` binary is removed when the bench ends) and returns its path.
func copyClient(dir string) (string, error) {
	in, err := os.Open("/proc/self/exe")
	if err != nil {
		return "", err
	}
	defer in.Close()
	path := filepath.Join(dir, "codex-bench-netclient")
	out, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return "", err
	}
	return path, out.Close()
}

// runProxy measures #P1–#P3.
func (b *Bench) runProxy(ctx context.Context) {
	setAll := func(err error) {
		for _, t := range b.targets() {
			t.setError("proxy", err)
		}
	}
	bin, err := copyClient(b.scratch)
	if err != nil {
		setAll(err)
		return
	}
	srv := make([]*proxyServer, 2) // ref, ours
	res := []*ProxyMetrics{{}, {}}
	b.ref.Res.Metrics.Proxy, b.ours.Res.Metrics.Proxy = res[0], res[1]
	for i, t := range b.targets() {
		s, err := b.startProxyServer(ctx, t)
		if err != nil {
			res[i].NotServed = "the server did not start in the bed: " + err.Error()
			t.setError("proxy", err)
			continue
		}
		defer s.c.Close()
		srv[i] = s
		logf("proxy: %s stdio server in its bed, pid %d", s.c.Label, s.c.Pid)
	}
	if srv[0] == nil && srv[1] == nil {
		return
	}
	// Which server serves the proxy: a short proxied run.
	for i, s := range srv {
		if s == nil {
			continue
		}
		r, err := s.client(ctx, bin, true, "-url", "http://"+netBedHost+"/", "-n", "1", "-warm", "0")
		if err != nil {
			res[i].NotServed = err.Error()
			if errors.Is(err, errNotServed) {
				res[i].NotServed = errNotServed.Error()
			}
			s.t.setError("proxy", fmt.Errorf("not served: %s", res[i].NotServed))
			logf("proxy: %s does not serve networkProxy: %s", s.t.Role, res[i].NotServed)
			continue
		}
		res[i].Served, res[i].DirectFromSandbox = true, r.Direct
		if r.Direct == "ok" {
			s.t.setError("proxy_isolation", fmt.Errorf("the proxied command connected to the destination directly (the proxy is advisory)"))
		}
	}
	direct := srv[0]
	if direct == nil {
		direct = srv[1]
	}
	b.proxyLatency(ctx, bin, srv, res, direct)
	b.proxyBulk(ctx, bin, srv, res, direct)
	b.proxyStart(ctx, srv, res)
}

// proxyLatency is #P1: rounds of one process per subject, each making
// proxyReqs requests after a few unmeasured ones; subjects take turns.
func (b *Bench) proxyLatency(ctx context.Context, bin string, srv []*proxyServer, res []*ProxyMetrics, direct *proxyServer) {
	rounds, per := 8, 50
	if b.cfg.Quick {
		rounds = 4
	}
	url := "http://" + netBedHost + "/"
	args := []string{"-url", url, "-n", fmt.Sprint(per), "-warm", "5"}
	floor := &ProxyLatency{}
	for i := range res {
		if res[i].Served {
			res[i].Request = &ProxyLatency{}
		}
	}
	logf("proxy: #P1 new-connection GET, %d rounds × %d requests per subject", rounds, per)
	for r := range rounds {
		for _, i := range order(3, r) {
			if ctx.Err() != nil {
				return
			}
			s, l, proxied := direct, floor, false
			if i < 2 {
				s, l, proxied = srv[i], res[i].Request, true
				if l == nil {
					continue
				}
			}
			if l.Error != "" {
				continue
			}
			cr, err := s.client(ctx, bin, proxied, args...)
			if err != nil {
				l.Error = err.Error()
				s.t.setError(map[bool]string{true: "proxy_request", false: "proxy_request_direct"}[proxied], err)
				continue
			}
			l.addRound(cr.RawMS)
		}
	}
	b.floors.ProxyDirect = floor
}

// proxyBulk is #P2: a 100 MiB GET per subject and round.
func (b *Bench) proxyBulk(ctx context.Context, bin string, srv []*proxyServer, res []*ProxyMetrics, direct *proxyServer) {
	rounds := 3
	args := []string{"-url", fmt.Sprintf("http://%s/bytes/%d", netBedHost, proxyBulkSize), "-bulk", fmt.Sprint(proxyBulkSize)}
	const what = "GET of 100 MiB from the bed's destination by the netclient"
	floor := &Throughput{Command: what + ", unsandboxed, direct", Size: proxyBulkSize}
	for i := range res {
		if res[i].Served {
			res[i].Bulk = &Throughput{Command: what + ", sandboxed, through the proxy", Size: proxyBulkSize}
		}
	}
	logf("proxy: #P2 100 MiB GET × %d rounds", rounds)
	for r := range rounds {
		for _, i := range order(3, r) {
			if ctx.Err() != nil {
				return
			}
			s, tp, proxied := direct, floor, false
			if i < 2 {
				s, tp, proxied = srv[i], res[i].Bulk, true
				if tp == nil {
					continue
				}
			}
			if tp.Failed >= 2 {
				continue
			}
			cr, err := s.client(ctx, bin, proxied, args...)
			if err != nil {
				tp.Error = err.Error()
				tp.add(ThroughputRun{FirstError: err.Error()})
				s.t.setError(map[bool]string{true: "proxy_bulk", false: "proxy_bulk_direct"}[proxied], err)
				continue
			}
			tp.add(newRun(cr.Bytes, time.Duration(cr.Seconds*float64(time.Second)), 0, cr.Bytes == proxyBulkSize))
		}
	}
	b.floors.ProxyDirectBulk = floor
}

// proxyStart is #P3: /bin/true start→closed, interleaved: the network on
// without a proxy, with a proxy (servers that serve it), and #11's sandbox.
func (b *Bench) proxyStart(ctx context.Context, srv []*proxyServer, res []*ProxyMetrics) {
	type slot struct {
		i    int
		kind int // 0 no proxy, 1 proxy, 2 #11 sandbox
	}
	var subs []subject
	var slots []slot
	for kind := range 3 {
		for i, s := range srv {
			if s == nil || (kind == 1 && !res[i].Served) {
				continue
			}
			subs = append(subs, subject{fmt.Sprintf("%s-%d", s.t.Role, kind), s.trueSampler(kind == 2, kind == 1)})
			slots = append(slots, slot{i, kind})
		}
	}
	n, warm := b.cfg.SandN, b.cfg.SandWarm
	rounds := max(1, min(b.cfg.Rounds, n))
	logf("proxy: #P3 sandboxed /bin/true start→closed, %d subjects (N=%d, %d rounds)", len(subs), n, rounds)
	out := interleave(ctx, subs, 1, warm, n, rounds)
	for k, sl := range slots {
		l := out[k].latency(0)
		if out[k].errs > 0 && out[k].lastErr != nil {
			srv[sl.i].t.setError(fmt.Sprintf("proxy_start_%d", sl.kind), fmt.Errorf("%d failed samples, last: %w", out[k].errs, out[k].lastErr))
		}
		switch sl.kind {
		case 0:
			res[sl.i].StartNoProxy = l
		case 1:
			res[sl.i].StartProxy = l
		default:
			res[sl.i].StartSandbox11 = l
		}
	}
}

// proxyAdded is the added latency of l over the direct floor, at the p50
// or the p90, overall and per round.
func proxyAdded(l, floor *ProxyLatency, p90 bool) (*float64, []float64) {
	if l == nil || floor == nil || l.N == 0 || floor.N == 0 {
		return nil, nil
	}
	v, fv, lr, fr := l.P50, floor.P50, l.RoundP50, floor.RoundP50
	if p90 {
		v, fv, lr, fr = l.P90, floor.P90, l.RoundP90, floor.RoundP90
	}
	var rounds []float64
	if len(lr) == len(fr) {
		for i := range lr {
			rounds = append(rounds, lr[i]-fr[i])
		}
	}
	return fp(round3(v - fv)), rounds
}

// proxyRows are the report rows of the proxy group.
func proxyRows(o, r Metrics, f *Floors) []Row {
	op, rp := o.Proxy, r.Proxy
	if op == nil && rp == nil {
		return nil
	}
	if op == nil {
		op = &ProxyMetrics{}
	}
	if rp == nil {
		rp = &ProxyMetrics{}
	}
	lp := func(l *ProxyLatency, p90 bool) (*float64, []float64) {
		if l == nil || l.N == 0 {
			return nil, nil
		}
		if p90 {
			return fp(l.P90), l.RoundP90
		}
		return fp(l.P50), l.RoundP50
	}
	var rows []Row
	for _, p90 := range []bool{false, true} {
		q := map[bool]string{false: "p50", true: "p90"}[p90]
		ov, orr := lp(op.Request, p90)
		rv, rr := lp(rp.Request, p90)
		fv, fr := lp(f.ProxyDirect, p90)
		rows = append(rows, newRow("#P1 GET on a new connection through the proxy "+q+" (floor: direct)", "ms", "lower", ov, rv, fv, orr, rr, fr))
		oa, oar := proxyAdded(op.Request, f.ProxyDirect, p90)
		ra, rar := proxyAdded(rp.Request, f.ProxyDirect, p90)
		rows = append(rows, newRow("#P1 latency the proxy adds "+q, "ms", "lower", oa, ra, nil, oar, rar, nil))
	}
	rows = append(rows, tpRow("#P2 100 MiB GET through the proxy (floor: direct)", op.Bulk, rp.Bulk, f.ProxyDirectBulk))
	for _, x := range []struct {
		name   string
		ou, re *Latency
	}{
		{"#P3 sandboxed /bin/true start→closed p50, network on, no proxy", op.StartNoProxy, rp.StartNoProxy},
		{"#P3 the same with a proxy asked", op.StartProxy, rp.StartProxy},
		{"#P3 the same with #11's sandbox (network off)", op.StartSandbox11, rp.StartSandbox11},
	} {
		rows = append(rows, latRow(x.name, x.ou, x.re, nil))
	}
	cost := func(p *ProxyMetrics) *float64 {
		if a, b := latP50(p.StartProxy), latP50(p.StartNoProxy); a != nil && b != nil {
			return fp(round3(*a - *b))
		}
		return nil
	}
	return append(rows, newRow("#P3 start-up cost of the proxy (with − without) p50", "ms", "lower", cost(op), cost(rp), nil, nil, nil, nil))
}

// proxyTargets are issue 21's targets.
func proxyTargets(rows []Row, o Metrics) []TargetCheck {
	t := []TargetCheck{
		ratioTarget(rows, "#P1 latency the proxy adds p50", "latency a new-connection GET through the proxy adds, p50 ≤ 1.5× the reference's", 1.5, 0, 0, 0),
		ratioTarget(rows, "#P2 100 MiB GET through the proxy (floor: direct)", "100 MiB GET through the proxy ≥ 1× the reference's throughput", 0, 0, 1, 0),
	}
	if p := o.Proxy; p != nil && !p.Served {
		for i := range t {
			t[i].Measured = "not served: " + p.NotServed
		}
	}
	st := TargetCheck{Target: "no start-up cost without a proxy: sandboxed /bin/true start→closed with the network on and no proxy ≤ 1.1× the same with #11's sandbox", Measured: "not measured"}
	if p := o.Proxy; p != nil && p.StartNoProxy != nil && p.StartSandbox11 != nil && p.StartNoProxy.N > 0 && p.StartSandbox11.N > 0 {
		r := roundRatio(p.StartNoProxy.Rounds, p.StartSandbox11.Rounds)
		if r == nil {
			r = ratio(fp(p.StartNoProxy.P50), fp(p.StartSandbox11.P50))
		}
		if r != nil {
			st.Measured = fmt.Sprintf("%.2f× (p50 %.2f ms without a proxy, %.2f ms with #11's sandbox)", *r, p.StartNoProxy.P50, p.StartSandbox11.P50)
			st.Pass = pass(*r <= 1.1)
		}
	}
	return append(t, st)
}

// proxyDetail adds the proxy group's latency detail and what the proxied
// command saw to the Markdown report.
func proxyDetail(b *strings.Builder, o, r *ProxyMetrics, f *Floors) {
	if o == nil && r == nil {
		return
	}
	pl := func(l *ProxyLatency) string {
		if l == nil || l.N == 0 {
			return "–"
		}
		return fmt.Sprintf("%.2f / %.2f / %.2f / %.2f (n=%d)", l.Min, l.P50, l.P90, l.Max, l.N)
	}
	side := func(p *ProxyMetrics) (string, string) {
		switch {
		case p == nil:
			return "not run", "–"
		case !p.Served:
			return "not served: " + p.NotServed, "–"
		}
		return pl(p.Request), p.DirectFromSandbox
	}
	ol, od := side(o)
	rl, rd := side(r)
	fmt.Fprintf(b, "\nProxy group, #P1 GET on a new connection, ms (min / p50 / p90 / max):\n\n| | ours | reference | direct |\n|---|---|---|---|\n")
	fmt.Fprintf(b, "| through the proxy | %s | %s | %s |\n", ol, rl, pl(f.ProxyDirect))
	fmt.Fprintf(b, "| a direct connect from the proxied command | %s | %s | |\n", od, rd)
}
