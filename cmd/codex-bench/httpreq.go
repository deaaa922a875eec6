package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"
)

// The http/request row (issue 20): a 100 MiB body from a loopback HTTP
// server made here, fetched with http/request and streamResponse (a
// buffered 100 MiB body would be one 133 MiB JSON line, and ours refuses
// above 16 MiB), our exec-server and the reference's each over stdio,
// started fresh for this group. Throughput is request to the final
// bodyDelta; the server's peak RSS is read after each run (VmHWM, absolute,
// and its growth over the run after clear_refs).

// httpBodySize is the body of each run.
const httpBodySize = 100 << 20

// HTTPMetrics are one server's http/request measurements.
type HTTPMetrics struct {
	Body        *Throughput `json:"streamed_body"`
	RSSGrowth   *PeakRSS    `json:"streamed_body_peak_rss_growth"`
	PeakRSSKiB  int64       `json:"streamed_body_max_peak_rss_kib"` // VmHWM after a run, the largest
	DeltaFrames int64       `json:"delta_notifications,omitempty"`  // of the last run
}

// httpBodyServer serves httpBodySize bytes at /body on loopback.
type httpBodyServer struct {
	URL string
	srv *http.Server
	wg  sync.WaitGroup
}

func startHTTPBodyServer() (*httpBodyServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	line := []byte("codex bench http/request body 0123456789abcdef\n")
	block := bytes.Repeat(line, 1<<16/len(line)+1)[:1<<16]
	mux := http.NewServeMux()
	mux.HandleFunc("/body", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(httpBodySize))
		for n := httpBodySize; n > 0; n -= len(block) {
			if _, err := w.Write(block[:min(n, len(block))]); err != nil {
				return
			}
		}
	})
	s := &httpBodyServer{URL: "http://" + ln.Addr().String() + "/body", srv: &http.Server{Handler: mux}}
	s.wg.Add(1)
	go func() { defer s.wg.Done(); _ = s.srv.Serve(ln) }()
	return s, nil
}

func (s *httpBodyServer) Close() {
	_ = s.srv.Close()
	s.wg.Wait()
}

// startHTTPServer starts bin as `exec-server --listen stdio` and does the
// handshake; its bodyDelta notifications go to the returned channel's
// reader through onDelta.
func startHTTPServer(ctx context.Context, label, bin, scratch string, onDelta func(line []byte)) (*StdioClient, error) {
	c, err := StartStdio(label, bin, []string{"exec-server", "--listen", "stdio"}, scratch)
	if err != nil {
		return nil, err
	}
	c.onNotify.Store(&onDelta)
	hctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, _, err := c.Call(hctx, "initialize", map[string]any{"clientName": "bench"}); err != nil {
		c.Close()
		return nil, fmt.Errorf("%s: initialize: %w", label, err)
	}
	if err := c.Notify("initialized", map[string]any{}); err != nil {
		c.Close()
		return nil, fmt.Errorf("%s: initialized: %w", label, err)
	}
	return c, nil
}

// deltaCounter counts the bytes of the bodyDelta notifications of one
// run, without decoding them, and reports the one with done.
type deltaCounter struct {
	mu     sync.Mutex
	bytes  int64
	frames int64
	done   chan string // the final error ("" for none)
}

func (d *deltaCounter) line(line []byte) {
	const key = `"deltaBase64":"`
	i := bytes.Index(line, []byte(key))
	if i < 0 || !bytes.Contains(line[:i], []byte(`"http/request/bodyDelta"`)) {
		return
	}
	rest := line[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return
	}
	n := int64(j / 4 * 3)
	if j > 0 {
		n -= int64(bytes.Count(rest[j-2:j], []byte("=")))
	}
	d.mu.Lock()
	d.bytes += n
	d.frames++
	done := d.done
	d.mu.Unlock()
	if bytes.Contains(rest[j:], []byte(`"done":true`)) {
		msg := ""
		if !bytes.Contains(rest[j:], []byte(`"error":null`)) {
			msg = string(rest[j:min(len(rest), j+200)])
		}
		select {
		case done <- msg:
		default:
		}
	}
}

func (d *deltaCounter) reset() {
	d.mu.Lock()
	d.bytes, d.frames, d.done = 0, 0, make(chan string, 1)
	d.mu.Unlock()
}

// httpRun fetches the body once through c and returns the run, the peak
// RSS growth and the peak RSS (KiB).
func httpRun(ctx context.Context, c *StdioClient, d *deltaCounter, url string, n int) (ThroughputRun, int64, int64, error) {
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", c.Pid), []byte("5"), 0); err != nil {
		return ThroughputRun{}, 0, 0, fmt.Errorf("resetting the peak RSS: %w", err)
	}
	base, err := readProcStatus(c.Pid)
	if err != nil {
		return ThroughputRun{}, 0, 0, err
	}
	d.reset()
	d.mu.Lock()
	done := d.done
	d.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 180*time.Second)
	defer cancel()
	t0 := time.Now()
	if _, _, err := c.Call(ctx, "http/request", map[string]any{"method": "GET", "url": url, "requestId": "bench-" + strconv.Itoa(n), "streamResponse": true}); err != nil {
		return ThroughputRun{}, 0, 0, err
	}
	var final string
	select {
	case final = <-done:
	case <-ctx.Done():
		return ThroughputRun{}, 0, 0, errors.New("no final bodyDelta within 180 s")
	}
	dur := time.Since(t0)
	hwm, err := readHWM(c.Pid)
	if err != nil {
		return ThroughputRun{}, 0, 0, err
	}
	d.mu.Lock()
	got, frames := d.bytes, d.frames
	d.mu.Unlock()
	run := newRun(got, dur, int(frames), final == "" && got == httpBodySize)
	if !run.OK {
		run.FirstError = fmt.Sprintf("%d of %d bytes, final error %q", got, httpBodySize, final)
	}
	return run, hwm - base.RSSKiB, hwm, nil
}

// httpFloorRun fetches the body with net/http and discards it: the
// machine's rate for the HTTP transfer itself.
func httpFloorRun(ctx context.Context, url string) ThroughputRun {
	t0 := time.Now()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return ThroughputRun{FirstError: err.Error()}
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	run := newRun(n, time.Since(t0), 0, err == nil && n == httpBodySize)
	if !run.OK {
		run.FirstError = fmt.Sprintf("%d bytes, %v", n, err)
	}
	return run
}

// runHTTP measures the http/request row, interleaved between the servers
// and the floor.
func (b *Bench) runHTTP(ctx context.Context) {
	hs, err := startHTTPBodyServer()
	if err != nil {
		for _, t := range b.targets() {
			t.setError("http_request", err)
		}
		return
	}
	defer hs.Close()
	clients := make([]*StdioClient, 2) // ref, ours
	counters := []*deltaCounter{{done: make(chan string, 1)}, {done: make(chan string, 1)}}
	for i, t := range b.targets() {
		c, err := startHTTPServer(ctx, t.Role+"-http", t.Res.Binary, b.scratch, counters[i].line)
		if err != nil {
			t.setError("http_request", err)
			return
		}
		defer c.Close()
		clients[i] = c
		logf("http: %s stdio server pid %d", c.Label, c.Pid)
	}
	res := []*HTTPMetrics{{}, {}}
	for i := range res {
		res[i].Body = &Throughput{Command: "http/request GET of a 100 MiB body from loopback, streamResponse", Size: httpBodySize}
		res[i].RSSGrowth = &PeakRSS{}
	}
	floor := &Throughput{Command: "net/http GET of the same body, read to the end", Size: httpBodySize}
	rounds := b.cfg.PipeRounds
	logf("http: 100 MiB streamed body × %d rounds", rounds)
	for r := range rounds {
		for _, i := range order(3, r) {
			if ctx.Err() != nil {
				break
			}
			if i == 2 {
				floor.add(httpFloorRun(ctx, hs.URL))
				continue
			}
			run, growth, peak, err := httpRun(ctx, clients[i], counters[i], hs.URL, r)
			if err != nil {
				run.FirstError = err.Error()
				b.targets()[i].setError("http_request", err)
			} else {
				res[i].RSSGrowth.add(growth)
				res[i].PeakRSSKiB = max(res[i].PeakRSSKiB, peak)
				res[i].DeltaFrames = int64(run.Chunks)
			}
			res[i].Body.add(run)
		}
	}
	b.ref.Res.Metrics.HTTP, b.ours.Res.Metrics.HTTP = res[0], res[1]
	b.floors.HTTPBody = floor
}

// httpRows are the report rows of the http/request group.
func httpRows(o, r Metrics, f *Floors) []Row {
	oh, rh := o.HTTP, r.HTTP
	if oh == nil {
		oh = &HTTPMetrics{}
	}
	if rh == nil {
		rh = &HTTPMetrics{}
	}
	peak := func(h *HTTPMetrics) *float64 {
		if h.RSSGrowth == nil || len(h.RSSGrowth.GrowthKiB) == 0 {
			return nil
		}
		return fp(float64(h.PeakRSSKiB))
	}
	growth := func(h *HTTPMetrics) *float64 {
		if h.RSSGrowth == nil || len(h.RSSGrowth.GrowthKiB) == 0 {
			return nil
		}
		return fp(float64(h.RSSGrowth.MaxKiB))
	}
	return []Row{
		tpRow("#H1 http/request streamed 100 MiB body", oh.Body, rh.Body, f.HTTPBody),
		newRow("#H1 the same: server peak RSS", "KiB", "lower", peak(oh), peak(rh), nil, nil, nil, nil),
		newRow("#H1 the same: max server peak RSS growth", "KiB", "lower", growth(oh), growth(rh), nil, nil, nil, nil),
	}
}

// httpTargets are issue 20's http/request target.
func httpTargets(rows []Row, o Metrics) []TargetCheck {
	t := []TargetCheck{ratioTarget(rows, "#H1 http/request streamed 100 MiB body", "http/request of a 100 MiB body ≥ 1× the reference's throughput", 0, 0, 1, 0)}
	mem := TargetCheck{Target: "http/request of a 100 MiB body at ≤ 32 MiB server peak RSS", Measured: "not measured"}
	if h := o.HTTP; h != nil && h.RSSGrowth != nil && len(h.RSSGrowth.GrowthKiB) > 0 {
		mem.Measured = fmt.Sprintf("peak RSS %d KiB (growth over a run ≤ %d KiB)", h.PeakRSSKiB, h.RSSGrowth.MaxKiB)
		mem.Pass = pass(h.PeakRSSKiB <= 32<<10)
	}
	return append(t, mem)
}
