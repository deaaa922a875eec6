package execserver

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/codexec/codex/httpreq"
	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wire"
	"go.uber.org/zap"
)

// Bounds of http/request (docs/protocol.md §6.16) [ours].
const (
	// MaxHTTPBufferedBody bounds a body returned whole in the result; a
	// larger one needs streamResponse.
	MaxHTTPBufferedBody = 16 << 20
	// maxHTTPBuffering is how many requests of one connection may buffer a
	// body at once, from its first byte read to its answer written; others
	// wait for a place.
	maxHTTPBuffering = 4
	// MaxHTTPRequests bounds the requests of a connection in flight at
	// once, streams included: each holds a connection to its server and
	// up to httpreq.MaxHeaderBytes of response headers.
	MaxHTTPRequests = 64
	// httpDeltaBytes is the largest read of a streamed body: one
	// notification's payload.
	httpDeltaBytes = 64 << 10
)

// httpConn is a connection's http/request state: the requestIds of its
// open streams, the count of requests in flight and the places for
// buffered bodies. It ends with the connection, whose context stops every
// request.
type httpConn struct {
	mu       sync.Mutex
	streams  map[string]struct{}
	inflight int
	buffer   chan struct{}
}

func (hc *httpConn) init() {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	if hc.streams == nil {
		hc.streams = map[string]struct{}{}
		hc.buffer = make(chan struct{}, maxHTTPBuffering)
	}
}

// httpRequestDecoded is the http/request binding: decode, handshake,
// validation, then the request runs on a goroutine of the connection, so
// that it never holds up the connection's other requests.
func httpRequestDecoded(_ context.Context, h *connHandler, req *rpc.Request) (any, error) {
	p, err := wire.DecodeHTTPRequestParams(req.Params)
	if err != nil {
		return nil, err
	}
	if err := h.check("http"); err != nil {
		return nil, err
	}
	hc := &h.http
	hc.init()
	// An open stream's requestId is refused before anything else is
	// checked, as the reference does; a request that fails its checks
	// reserves nothing.
	hc.mu.Lock()
	_, busy := hc.streams[p.RequestID]
	hc.mu.Unlock()
	if busy && p.StreamResponse {
		return nil, errStreamActive(p.RequestID)
	}
	r, err := h.httpRequest(p)
	if err != nil {
		return nil, err
	}
	hc.mu.Lock()
	_, busy = hc.streams[p.RequestID]
	busy = busy && p.StreamResponse
	full := hc.inflight >= MaxHTTPRequests
	if !busy && !full {
		hc.inflight++
		if p.StreamResponse {
			hc.streams[p.RequestID] = struct{}{}
		}
	}
	hc.mu.Unlock()
	if busy {
		return nil, errStreamActive(p.RequestID)
	}
	if full {
		return nil, rpc.Errorf(rpc.CodeInternalError, "http/request has %d requests in flight on this connection, the most it may have; wait for one to end", MaxHTTPRequests)
	}
	h.c.Go(func(ctx context.Context) { h.runHTTP(ctx, req.ID, p, r) })
	return nil, rpc.ErrAsync
}

func errStreamActive(id string) error {
	return rpc.Errorf(rpc.CodeInvalidParams, "http/request streamResponse requestId `%s` is already active", rpc.Clip(id))
}

// httpRequest validates p into a request, in the reference's order:
// method, URL, then each header's name, variable and value. A header's
// value is never part of an error text: valueEnvVar reads a secret.
func (h *connHandler) httpRequest(p *wire.HTTPRequestParams) (*httpreq.Request, error) {
	if !httpreq.ValidMethod(p.Method) {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "http/request method is invalid: invalid HTTP method")
	}
	u, err := parseHTTPURL(p.URL)
	if err != nil {
		return nil, err
	}
	r := &httpreq.Request{Method: p.Method, URL: u, Follow: p.RedirectPolicy != wire.RedirectStop, Proxy: httpProxy}
	for _, hd := range p.Headers {
		if !httpreq.ValidHeaderName(hd.Name) {
			return nil, rpc.Errorf(rpc.CodeInvalidParams, "http/request header name is invalid: invalid HTTP header name")
		}
		value := hd.Value
		if hd.ValueEnvVar != nil {
			v, ok := lookupEnv(h.reg.cfg.BaseEnv, *hd.ValueEnvVar)
			if !ok {
				return nil, rpc.Errorf(rpc.CodeInvalidParams, "http/request header %s requires executor environment variable %s", hd.Name, rpc.Clip(*hd.ValueEnvVar))
			}
			value += v
		}
		if !httpreq.ValidHeaderValue(value) {
			return nil, rpc.Errorf(rpc.CodeInvalidParams, "http/request header value is invalid for %s: failed to parse header value", hd.Name)
		}
		if strings.EqualFold(hd.Name, "transfer-encoding") {
			continue // the body is sent with its length
		}
		r.Headers = append(r.Headers, httpreq.Header{Name: hd.Name, Value: value})
	}
	if p.BodyBase64 != nil {
		r.Body = *p.BodyBase64
	}
	return r, nil
}

// redactedURL is u for a log: without its user and password.
func redactedURL(u *url.URL) string {
	c := *u
	c.User = nil
	return httpreq.Display(&c)
}

// lookupEnv finds name in env, the server's environment as its commands
// inherit it (SessionConfig.BaseEnv).
func lookupEnv(env []string, name string) (string, bool) {
	if name == "" {
		return "", false
	}
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// httpProxy is the proxy of the server's environment (HTTP_PROXY,
// HTTPS_PROXY, NO_PROXY), as net/http reads it.
func httpProxy(u *url.URL) (*url.URL, error) {
	return http.ProxyFromEnvironment(&http.Request{URL: u})
}

// parseHTTPURL parses an absolute http or https URL with the reference's
// texts.
func parseHTTPURL(s string) (*url.URL, error) {
	bad := func(text string) error {
		return rpc.Errorf(rpc.CodeInvalidParams, "http/request url is invalid: %s", text)
	}
	u, err := url.Parse(s)
	if err == nil && u.Host == "" && (u.Scheme == "http" || u.Scheme == "https") && strings.HasPrefix(u.Opaque+u.Path, "/") {
		// The URL standard skips any number of slashes after a special
		// scheme: http:///x is http://x/.
		u, err = url.Parse(u.Scheme + "://" + strings.TrimLeft(s[len(u.Scheme)+1:], "/\\"))
	}
	switch {
	case err != nil:
		var ue *url.Error
		if errors.As(err, &ue) && strings.Contains(ue.Err.Error(), "missing protocol scheme") {
			return nil, bad("relative URL without a base")
		}
		if strings.Contains(err.Error(), "port") {
			return nil, bad("invalid port number")
		}
		return nil, bad("invalid international domain name")
	case u.Scheme == "":
		return nil, bad("relative URL without a base")
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "http/request only supports http and https URLs, got %s", rpc.Clip(u.Scheme))
	case u.Host == "" || u.Hostname() == "":
		return nil, bad("empty host")
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.ParseUint(port, 10, 16); err != nil || n > 65535 {
			return nil, bad("invalid port number")
		}
	}
	return u, nil
}

// runHTTP makes the request and answers; a streamed body follows as
// notifications, sent through the connection's ordered send path, which
// blocks while the peer does not read: the body is read no faster than
// the client takes it, one read buffer at a time.
func (h *connHandler) runHTTP(connCtx context.Context, id rpc.ID, p *wire.HTTPRequestParams, r *httpreq.Request) {
	hc := &h.http
	ctx := connCtx // the request's: the connection's, bounded by timeoutMs
	// release ends the request's place before its last message goes out,
	// so that a client that read it may reuse the requestId at once.
	var released bool
	release := func() {
		if released {
			return
		}
		released = true
		hc.mu.Lock()
		hc.inflight--
		if p.StreamResponse {
			delete(hc.streams, p.RequestID)
		}
		hc.mu.Unlock()
	}
	defer release()
	respond := func(res any, err error) { release(); _ = h.c.Respond(id, res, err) }
	if p.TimeoutMs != nil {
		if *p.TimeoutMs == 0 {
			respond(nil, rpc.Errorf(rpc.CodeInternalError, "http/request failed: route-aware request timed out"))
			return
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, httpreq.DeadlineFor(*p.TimeoutMs))
		defer cancel()
	}
	resp, err := httpreq.Do(ctx, r)
	if err != nil {
		// The log names the method, the URL without credentials and the
		// cause; never a header (valueEnvVar puts secrets there).
		h.b.log.Debug("http request failed", zap.String("method", r.Method), zap.String("url", redactedURL(r.URL)), zap.NamedError("cause", errors.Unwrap(err)), zap.String("error", err.Error()))
		respond(nil, rpc.Errorf(rpc.CodeInternalError, "http/request failed: %s", err))
		return
	}
	h.b.log.Debug("http request", zap.String("method", r.Method), zap.String("url", redactedURL(r.URL)), zap.Int("status", resp.Status), zap.Bool("stream", p.StreamResponse))
	defer resp.Body.Close()
	res := wire.HTTPRequestResult{Status: resp.Status, Headers: make([]wire.HTTPResponseHeader, len(resp.Headers)), BodyBase64: wire.Bytes{}}
	for i, hd := range resp.Headers {
		res.Headers[i] = wire.HTTPResponseHeader{Name: hd.Name, Value: hd.Value}
	}
	if !p.StreamResponse {
		select {
		case hc.buffer <- struct{}{}:
		case <-ctx.Done():
			respond(nil, rpc.Errorf(rpc.CodeInternalError, "failed to read http/request response body: %s", httpreq.ErrBody))
			return
		}
		body, err := readBounded(resp.Body, resp.Length, MaxHTTPBufferedBody)
		if err != nil {
			<-hc.buffer
			respond(nil, rpc.Errorf(rpc.CodeInternalError, "failed to read http/request response body: %s", err))
			return
		}
		// The place is kept until the answer is written (it streams the
		// body into the message): a client that does not read holds at
		// most maxHTTPBuffering bodies.
		res.BodyBase64 = body
		respond(res, nil)
		<-hc.buffer
		return
	}
	if h.c.Respond(id, res, nil) != nil {
		return
	}
	qid := wire.QuoteID(p.RequestID)
	buf := make([]byte, httpDeltaBytes)
	var seq uint64
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			seq++
			frame := wire.AppendHTTPBodyDelta(rpc.AcquireFrameSize(wire.OutputFrameSize(n)+len(qid)), qid, seq, buf[:n], false, nil)
			if h.c.Send(connCtx, frame, true) != nil {
				return
			}
		}
		if err == nil {
			continue
		}
		var text *string
		if err != io.EOF {
			t := httpreq.ErrBody.Error()
			text = &t
		}
		seq++
		release()
		_ = h.c.Send(connCtx, wire.AppendHTTPBodyDelta(rpc.AcquireFrameSize(160+len(qid)), qid, seq, nil, true, text), true)
		return
	}
}

// errBodyTooLarge is the answer for a buffered body above the bound.
var errBodyTooLarge = errors.New("the body is larger than the " + strconv.Itoa(MaxHTTPBufferedBody) + " bytes http/request buffers; ask for streamResponse")

// readBounded reads r whole, up to limit bytes; length is its stated
// length (-1: unknown), which sizes the buffer once.
func readBounded(r io.Reader, length int64, limit int) ([]byte, error) {
	if length > int64(limit) {
		return nil, errBodyTooLarge
	}
	var out []byte
	if length >= 0 {
		out = make([]byte, 0, length)
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if len(out)+n > limit {
			return nil, errBodyTooLarge
		}
		out = append(out, buf[:n]...)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, httpreq.ErrBody
		}
	}
}
