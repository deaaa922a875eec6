// Package httpreq is the HTTP/1.1 client behind http/request
// (docs/protocol.md §6.16): it writes the request itself over a net.Conn,
// so that headers go out in the caller's order and case rules, and reads
// the response header by header, so that they come back in wire order.
// net/http keeps neither. It follows redirects as the reference does,
// honours a whole-request deadline and bounds what it buffers: one status
// line and header block of at most MaxHeaderBytes; the body is the
// caller's to read, through Response.Body.
//
// It imports nothing of ours.
package httpreq

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// MaxRedirects is how many redirects are followed; one more fails the
// request with "too many redirects".
const MaxRedirects = 10

// MaxHeaderBytes bounds the status line and headers of one response.
const MaxHeaderBytes = 1 << 20

// maxLine bounds one header line (the read buffer's size).
const maxLine = 64 << 10

// Header is one header field. Names are sent lower-cased.
type Header struct{ Name, Value string }

// Request is one request to make.
type Request struct {
	Method  string
	URL     *url.URL // absolute http or https
	Headers []Header // sent grouped by name, in first-seen order
	Body    []byte
	Follow  bool // follow redirects (up to MaxRedirects)
	// Proxy returns the proxy for a URL, or nil for none.
	Proxy func(*url.URL) (*url.URL, error)
	// Dial connects; nil is a net.Dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// TLS is the base TLS configuration (nil: the system roots).
	TLS *tls.Config
}

// Response is the final response. Body reads its body and must be closed;
// closing it closes the connection. Read errors are ErrBody.
type Response struct {
	Status  int
	Headers []Header // names lower-cased, in wire order
	Body    io.ReadCloser
	// Length is the body's length when the response states it, else -1.
	Length int64
}

// ErrBody is the error of a body that could not be read whole: the
// connection ended early, broke, or the deadline passed.
var ErrBody = errors.New("error decoding response body")

// ErrTooManyRedirects is returned after MaxRedirects redirects.
var ErrTooManyRedirects = errors.New("too many redirects")

// SendError is a failure before the response's headers were in: connect,
// DNS, TLS, the deadline, a malformed response. Its text names the URL
// only, never a header.
type SendError struct {
	URL string
	Err error // the cause, for logs of the caller's choosing
}

func (e *SendError) Error() string { return "error sending request for url (" + e.URL + ")" }
func (e *SendError) Unwrap() error { return e.Err }

// SchemeError is a redirect to a scheme other than http or https.
type SchemeError struct{ Scheme string }

func (e *SchemeError) Error() string {
	return "redirect target uses unsupported URL scheme: " + e.Scheme
}

// Do makes the request, following redirects when asked, and returns the
// final response once its headers are in. ctx bounds everything, the body
// included: its deadline and its cancellation close the connection.
func Do(ctx context.Context, r *Request) (*Response, error) {
	u := r.URL
	method := r.Method
	body := r.Body
	headers := groupHeaders(r.Headers, u)
	for hop := 0; ; hop++ {
		resp, err := roundTrip(ctx, r, method, u, headers, body)
		if err != nil {
			return nil, err
		}
		loc := ""
		switch resp.Status {
		case 301, 302, 303, 307, 308:
			loc = headerValue(resp.Headers, "location")
		}
		if !r.Follow || loc == "" {
			return resp, nil
		}
		resp.Body.Close()
		if hop >= MaxRedirects {
			return nil, ErrTooManyRedirects
		}
		next, err := u.Parse(loc)
		if err != nil {
			return nil, &SendError{URL: Display(u), Err: err}
		}
		if next.Scheme != "http" && next.Scheme != "https" {
			return nil, &SchemeError{Scheme: next.Scheme}
		}
		if resp.Status == 303 && method != "HEAD" || (resp.Status == 301 || resp.Status == 302) && method == "POST" {
			method = "GET"
			body = nil
			headers = without(headers, "content-type", "content-length", "transfer-encoding", "content-encoding")
		}
		if origin(next) != origin(u) {
			headers = without(headers, "authorization", "cookie", "proxy-authorization", "www-authenticate")
		}
		headers = without(headers, "referer")
		if ref := referer(u, next); ref != "" {
			headers = append(headers, Header{"referer", ref})
		}
		u = next
	}
}

// groupHeaders lower-cases names and groups repeated ones at the place of
// the first, as the reference's header map sends them; credentials in the
// URL come first as basic authorization.
func groupHeaders(in []Header, u *url.URL) []Header {
	var out []Header
	if u.User != nil {
		pw, _ := u.User.Password()
		out = append(out, Header{"authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pw))})
	}
	for i, h := range in {
		name := strings.ToLower(h.Name)
		if hasHeader(out, name) {
			continue
		}
		for _, g := range in[i:] {
			if strings.EqualFold(g.Name, name) {
				out = append(out, Header{name, g.Value})
			}
		}
	}
	return out
}

func hasHeader(hs []Header, name string) bool {
	for _, h := range hs {
		if h.Name == name {
			return true
		}
	}
	return false
}

func headerValue(hs []Header, name string) string {
	for _, h := range hs {
		if h.Name == name {
			return h.Value
		}
	}
	return ""
}

func without(hs []Header, names ...string) []Header {
	out := hs[:0:0]
	for _, h := range hs {
		drop := false
		for _, n := range names {
			drop = drop || h.Name == n
		}
		if !drop {
			out = append(out, h)
		}
	}
	return out
}

// origin is scheme://host:port with the default port filled in.
func origin(u *url.URL) string { return u.Scheme + "://" + hostPort(u) }

// referer is what a redirect from u to next sends: the whole URL within
// one origin, the origin alone across origins, nothing from https to http.
func referer(u, next *url.URL) string {
	if u.Scheme == "https" && next.Scheme != "https" {
		return ""
	}
	if origin(u) != origin(next) {
		return u.Scheme + "://" + hostHeader(u) + "/"
	}
	c := *u
	c.User, c.Fragment, c.RawFragment = nil, "", ""
	return Display(&c)
}

// Display writes u as the reference's URL type does: no fragment, a path
// of at least "/", no default port.
func Display(u *url.URL) string {
	var b strings.Builder
	b.WriteString(u.Scheme + "://")
	if u.User != nil {
		b.WriteString(u.User.String() + "@")
	}
	b.WriteString(hostHeader(u))
	b.WriteString(target(u))
	return b.String()
}

// hostHeader is the host and, unless it is the scheme's default, the port.
func hostHeader(u *url.URL) string {
	host, port := u.Hostname(), u.Port()
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port == "" || port == defaultPort(u.Scheme) {
		return host
	}
	return host + ":" + port
}

func defaultPort(scheme string) string {
	if scheme == "https" {
		return "443"
	}
	return "80"
}

func hostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = defaultPort(u.Scheme)
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// target is the origin-form request target: the path (at least "/") and
// the query, with what may not appear raw percent-encoded.
func target(u *url.URL) string {
	p := u.EscapedPath()
	if p == "" {
		p = "/"
	}
	if u.RawQuery != "" || u.ForceQuery {
		p += "?" + escapeQuery(u.RawQuery)
	}
	return p
}

// escapeQuery percent-encodes controls, space, non-ASCII and the
// characters the URL standard's query set names; the rest stays as given.
func escapeQuery(q string) string {
	var b strings.Builder
	for i := 0; i < len(q); i++ {
		c := q[i]
		if c <= ' ' || c >= 0x7f || c == '"' || c == '#' || c == '<' || c == '>' || c == '\'' {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// roundTrip makes one request on a new connection and reads the
// response's head.
func roundTrip(ctx context.Context, r *Request, method string, u *url.URL, headers []Header, body []byte) (*Response, error) {
	sendErr := func(err error) error { return &SendError{URL: Display(u), Err: err} }
	conn, proxied, err := connect(ctx, r, u)
	if err != nil {
		return nil, sendErr(err)
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	fail := func(err error) (*Response, error) {
		stop()
		conn.Close()
		return nil, sendErr(err)
	}
	if d, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(d)
	}
	w := bufio.NewWriterSize(conn, 16<<10)
	reqTarget := target(u)
	if proxied {
		reqTarget = u.Scheme + "://" + hostHeader(u) + reqTarget
	}
	writeHead(w, method, reqTarget, headers, u, len(body))
	if r.Proxy != nil && proxied {
		if p, _ := r.Proxy(u); p != nil && p.User != nil {
			pw, _ := p.User.Password()
			fmt.Fprintf(w, "proxy-authorization: Basic %s\r\n", base64.StdEncoding.EncodeToString([]byte(p.User.Username()+":"+pw)))
		}
	}
	w.WriteString("\r\n")
	w.Write(body)
	if err := w.Flush(); err != nil {
		return fail(err)
	}
	br := bufio.NewReaderSize(conn, maxLine)
	status, hs, err := readHead(br)
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return fail(err)
	}
	rb, err := bodyReader(br, method, status, hs)
	if err != nil {
		return fail(err)
	}
	length := int64(-1)
	switch r := rb.(type) {
	case eofReader:
		length = 0
	case *exact:
		length = r.left
	}
	return &Response{Status: status, Headers: hs, Length: length, Body: &bodyCloser{r: rb, conn: conn, stop: stop}}, nil
}

// writeHead writes the request line and the headers: the caller's, then
// accept and host unless given, then the body's length.
func writeHead(w *bufio.Writer, method, reqTarget string, headers []Header, u *url.URL, bodyLen int) {
	w.WriteString(method + " " + reqTarget + " HTTP/1.1\r\n")
	for _, h := range headers {
		w.WriteString(h.Name + ": " + h.Value + "\r\n")
	}
	if !hasHeader(headers, "accept") {
		w.WriteString("accept: */*\r\n")
	}
	if !hasHeader(headers, "host") {
		w.WriteString("host: " + hostHeader(u) + "\r\n")
	}
	if bodyLen > 0 && !hasHeader(headers, "content-length") {
		w.WriteString("content-length: " + strconv.Itoa(bodyLen) + "\r\n")
	}
}

// connect opens the connection for u: directly, through an HTTP proxy
// (absolute-form for http, CONNECT for https), then TLS for https.
func connect(ctx context.Context, r *Request, u *url.URL) (net.Conn, bool, error) {
	dial := r.Dial
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	var proxy *url.URL
	if r.Proxy != nil {
		p, err := r.Proxy(u)
		if err != nil {
			return nil, false, err
		}
		proxy = p
	}
	addr := hostPort(u)
	if proxy != nil {
		addr = hostPort(proxy)
	}
	conn, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, false, err
	}
	if proxy != nil && u.Scheme == "http" {
		return conn, true, nil
	}
	if proxy != nil {
		if err := tunnel(ctx, conn, u, proxy); err != nil {
			conn.Close()
			return nil, false, err
		}
	}
	if u.Scheme != "https" {
		return conn, false, nil
	}
	cfg := &tls.Config{}
	if r.TLS != nil {
		cfg = r.TLS.Clone()
	}
	cfg.ServerName = u.Hostname()
	cfg.NextProtos = []string{"http/1.1"}
	tc := tls.Client(conn, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		conn.Close()
		return nil, false, err
	}
	return tc, false, nil
}

// tunnel asks the proxy for a CONNECT tunnel to u.
func tunnel(ctx context.Context, conn net.Conn, u, proxy *url.URL) error {
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	hp := hostPort(u)
	req := "CONNECT " + hp + " HTTP/1.1\r\nHost: " + hp + "\r\n"
	if proxy.User != nil {
		pw, _ := proxy.User.Password()
		req += "proxy-authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(proxy.User.Username()+":"+pw)) + "\r\n"
	}
	if _, err := io.WriteString(conn, req+"\r\n"); err != nil {
		return err
	}
	// Read the answer byte by byte up to its blank line, so that nothing
	// of the tunnel is buffered away.
	br := bufio.NewReaderSize(&oneByte{conn}, 16)
	status, _, err := readHead(br)
	if err != nil {
		return err
	}
	if status/100 != 2 {
		return fmt.Errorf("proxy answered CONNECT with %d", status)
	}
	return nil
}

type oneByte struct{ r io.Reader }

func (o *oneByte) Read(p []byte) (int, error) { return o.r.Read(p[:min(len(p), 1)]) }

// readHead reads a response's status line and headers, skipping interim
// (1xx but 101) responses.
func readHead(br *bufio.Reader) (int, []Header, error) {
	budget := MaxHeaderBytes
	for {
		line, err := readLine(br, &budget)
		if err != nil {
			return 0, nil, err
		}
		status, err := parseStatus(line)
		if err != nil {
			return 0, nil, err
		}
		var hs []Header
		for {
			line, err := readLine(br, &budget)
			if err != nil {
				return 0, nil, err
			}
			if line == "" {
				break
			}
			if line[0] == ' ' || line[0] == '\t' {
				return 0, nil, errors.New("obsolete line folding in a response header")
			}
			name, value, ok := strings.Cut(line, ":")
			if !ok || !ValidHeaderName(name) {
				return 0, nil, fmt.Errorf("malformed response header line")
			}
			hs = append(hs, Header{strings.ToLower(name), strings.Trim(value, " \t")})
		}
		if status >= 100 && status < 200 && status != 101 {
			continue
		}
		return status, hs, nil
	}
}

func readLine(br *bufio.Reader, budget *int) (string, error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return "", errors.New("response header line too long")
		}
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return "", err
	}
	if *budget -= len(line); *budget < 0 {
		return "", errors.New("response headers too large")
	}
	return strings.TrimSuffix(strings.TrimSuffix(string(line), "\n"), "\r"), nil
}

func parseStatus(line string) (int, error) {
	proto, rest, ok := strings.Cut(line, " ")
	if !ok || (proto != "HTTP/1.1" && proto != "HTTP/1.0") || len(rest) < 3 {
		return 0, errors.New("malformed status line")
	}
	code, err := strconv.Atoi(rest[:3])
	if err != nil || code < 100 || code > 999 || (len(rest) > 3 && rest[3] != ' ') {
		return 0, errors.New("malformed status line")
	}
	return code, nil
}

// bodyReader frames the body: none for HEAD, 1xx, 204 and 304; chunked
// when the last transfer coding is chunked; Content-Length bytes; else
// up to the connection's end.
func bodyReader(br *bufio.Reader, method string, status int, hs []Header) (io.Reader, error) {
	if method == "HEAD" || status < 200 || status == 204 || status == 304 {
		return eofReader{}, nil
	}
	te := ""
	var lengths []string
	for _, h := range hs {
		switch h.Name {
		case "transfer-encoding":
			te = h.Value
		case "content-length":
			lengths = append(lengths, h.Value)
		}
	}
	if te != "" {
		codings := strings.Split(te, ",")
		if strings.EqualFold(strings.TrimSpace(codings[len(codings)-1]), "chunked") {
			return httputil.NewChunkedReader(br), nil
		}
		return br, nil
	}
	if len(lengths) > 0 {
		n, err := strconv.ParseUint(strings.TrimSpace(lengths[0]), 10, 63)
		for _, l := range lengths[1:] {
			if strings.TrimSpace(l) != strings.TrimSpace(lengths[0]) {
				err = errors.New("conflicting content-length")
			}
		}
		if err != nil {
			return nil, fmt.Errorf("invalid content-length")
		}
		return &exact{r: br, left: int64(n)}, nil
	}
	return br, nil
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// exact reads n bytes; an end before them is an error.
type exact struct {
	r    io.Reader
	left int64
}

func (e *exact) Read(p []byte) (int, error) {
	if e.left == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > e.left {
		p = p[:e.left]
	}
	n, err := e.r.Read(p)
	e.left -= int64(n)
	if err == io.EOF && e.left > 0 {
		err = io.ErrUnexpectedEOF
	}
	if e.left == 0 && err == io.EOF {
		err = nil
	}
	return n, err
}

// bodyCloser maps read failures to ErrBody and closes the connection.
type bodyCloser struct {
	r    io.Reader
	conn net.Conn
	stop func() bool
}

func (b *bodyCloser) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("%w: %w", ErrBody, err)
	}
	return n, err
}

func (b *bodyCloser) Close() error {
	b.stop()
	return b.conn.Close()
}

// ValidMethod reports whether m is an HTTP method token.
func ValidMethod(m string) bool { return isToken(m) }

// ValidHeaderName reports whether n is a header field name (a token).
func ValidHeaderName(n string) bool { return isToken(n) }

// ValidHeaderValue reports whether v may be sent as a header value: no
// control characters but tab, no DEL; bytes above 0x7f pass (obs-text).
func ValidHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 || c <= ' ' || strings.IndexByte("\"(),/:;<=>?@[\\]{}\x7f", c) >= 0 {
			return false
		}
	}
	return true
}

// DeadlineFor is the context deadline of a timeout in milliseconds.
func DeadlineFor(ms uint64) time.Duration {
	return time.Duration(min(ms, uint64(24*time.Hour/time.Millisecond))) * time.Millisecond
}
