package netproxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// limitReader lets at most n bytes through until the limit is lifted: it
// bounds a request's head without bounding its body.
type limitReader struct {
	r net.Conn
	n int64 // < 0: unlimited
}

func (l *limitReader) Read(b []byte) (int, error) {
	if l.n == 0 {
		return 0, errHeadTooLarge
	}
	if l.n > 0 && int64(len(b)) > l.n {
		b = b[:l.n]
	}
	n, err := l.r.Read(b)
	if l.n > 0 {
		l.n -= int64(n)
	}
	return n, err
}

var (
	errHeadTooLarge = errors.New("request head too large")
	errNoAddress    = errors.New("the name has no address")
)

// readers recycles the per-connection buffered readers.
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4096) }}

// handleHTTP serves one client connection of the HTTP proxy: requests
// one after another (kept alive while both ends allow it) until a CONNECT
// turns it into a tunnel, an error, or the client goes quiet.
func (p *Proxy) handleHTTP(c net.Conn) {
	lr := &limitReader{r: c}
	br := readers.Get().(*bufio.Reader)
	br.Reset(lr)
	defer func() { br.Reset(nil); readers.Put(br) }()
	client := c.RemoteAddr().String()
	first := true
	for {
		if first {
			c.SetReadDeadline(time.Now().Add(p.o.HandshakeTimeout))
		} else {
			// Waiting for the next request: idle, then the head.
			c.SetReadDeadline(time.Now().Add(p.o.IdleTimeout))
			if _, err := br.Peek(1); err != nil {
				return
			}
			c.SetReadDeadline(time.Now().Add(p.o.HandshakeTimeout))
		}
		first = false
		lr.n = MaxHeaderBytes + int64(br.Buffered())
		req, err := http.ReadRequest(br)
		lr.n = -1
		if err != nil {
			if errors.Is(err, errHeadTooLarge) {
				writePlain(c, 431, "Request Header Fields Too Large", "", "request head too large")
			} else if err != io.EOF && !isTimeout(err) {
				writePlain(c, 400, "Bad Request", "", "malformed request")
			}
			return
		}
		c.SetReadDeadline(time.Time{})
		if req.Method == http.MethodConnect {
			p.connect(c, br, req, client)
			return
		}
		if !p.forward(c, br, req, client) {
			return
		}
	}
}

// target returns the host and port a request names: the absolute-form
// URI's authority, else the Host header (the reference judges an
// origin-form request by its Host). ok is false for an unreadable host,
// including any IPv6 literal (the reference answers those 400).
func target(req *http.Request) (host string, port int, ok bool) {
	auth := req.Host
	if req.URL.IsAbs() {
		if req.URL.Scheme != "http" {
			return "", 0, false
		}
		auth = req.URL.Host
	}
	if auth == "" || strings.ContainsAny(auth, "[]@") {
		return "", 0, false
	}
	host, port = auth, 80
	if i := strings.LastIndexByte(auth, ':'); i >= 0 {
		n, err := strconv.Atoi(auth[i+1:])
		if err != nil || n <= 0 || n > 65535 {
			return "", 0, false
		}
		host, port = auth[:i], n
	}
	host = normalizeHost(host)
	if !validHost(host) || strings.ContainsRune(host, ':') {
		return "", 0, false
	}
	return host, port, true
}

// hopHeaders are removed from what the proxy relays, both ways.
var hopHeaders = []string{
	"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

func stripHop(h http.Header) {
	for _, f := range h.Values("Connection") {
		for _, name := range strings.Split(f, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
	for k := range h {
		if strings.HasPrefix(k, "Proxy-") {
			delete(h, k)
		}
	}
}

// forward relays one plain HTTP request and its response. It reports
// whether the client connection may carry another request.
func (p *Proxy) forward(c net.Conn, br *bufio.Reader, req *http.Request, client string) bool {
	defer req.Body.Close()
	host, port, ok := target(req)
	if !ok {
		writePlain(c, 400, "Bad Request", "", "invalid Host header")
		return false
	}
	r := Request{Protocol: "http", Host: host, Port: port, Method: req.Method, Client: client}
	d := p.decide(r, func() (context.Context, func()) { return p.watchClient(c, br) })
	if !d.Allowed {
		writeBlockedJSON(c, r, d.Outcome)
		// A refused request's body is not read: the connection ends
		// after the answer unless the request had none.
		return !req.Close && req.ContentLength == 0
	}
	up, err := p.dialFor(d, port)
	if err != nil {
		writePlain(c, 502, "Bad Gateway", "", "upstream failure")
		return false
	}
	defer p.untrack(up)
	stripHop(req.Header)
	req.URL.Scheme, req.URL.Host, req.URL.User = "", "", nil
	req.RequestURI = ""
	if req.URL.Path == "" {
		req.URL.Path = "/"
	}
	req.Host = hostHeader(host, port)
	clientClose := req.Close
	req.Close = true // one upstream connection per request
	if req.Header.Get("User-Agent") == "" {
		req.Header["User-Agent"] = []string{""} // net/http would add its own
	}
	upr := readers.Get().(*bufio.Reader)
	upr.Reset(up)
	defer func() { upr.Reset(nil); readers.Put(upr) }()
	werr := make(chan error, 1)
	go func() { werr <- req.Write(up) }()
	bw := bufio.NewWriterSize(c, 4096)
	resp, err := readFinal(upr, req, bw)
	if err != nil {
		endWriter(c, up, werr)
		writePlain(c, 502, "Bad Gateway", "", "upstream failure")
		return false
	}
	defer resp.Body.Close()
	stripHop(resp.Header)
	chunked := len(resp.TransferEncoding) > 0
	resp.Close = resp.ContentLength < 0 && !chunked && bodyAllowed(req.Method, resp.StatusCode)
	resp.TransferEncoding = nil
	if chunked {
		resp.TransferEncoding = []string{"chunked"}
	}
	if !chunked && resp.ContentLength > 0 && bodyAllowed(req.Method, resp.StatusCode) {
		err = relaySized(c, bw, resp, upr, up)
	} else {
		err = resp.Write(bw)
		if err == nil {
			err = bw.Flush()
		}
	}
	if endWriter(c, up, werr) != nil {
		// The upstream answered before the whole request body went
		// through; what the client still sends is unread, so the
		// connection cannot go on.
		return false
	}
	return err == nil && !clientClose && !resp.Close
}

// endWriter waits for the goroutine relaying the request; if it is still
// reading the client or writing the upstream, past deadlines stop it (and
// its error says the client connection cannot carry another request).
// A writer that had already done its I/O is not disturbed by them.
func endWriter(c, up net.Conn, werr chan error) error {
	select {
	case err := <-werr:
		return err
	default:
	}
	c.SetReadDeadline(time.Unix(1, 0))
	up.SetWriteDeadline(time.Unix(1, 0))
	err := <-werr
	c.SetReadDeadline(time.Time{})
	return err
}

// readFinal reads the upstream's response, passing any 1xx interim
// response (100 Continue) straight on to the client through bw.
func readFinal(upr *bufio.Reader, req *http.Request, bw *bufio.Writer) (*http.Response, error) {
	for {
		resp, err := http.ReadResponse(upr, req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			return resp, nil
		}
		stripHop(resp.Header)
		bw.WriteString("HTTP/1.1 " + resp.Status + "\r\n")
		resp.Header.Write(bw)
		bw.WriteString("\r\n")
		if err := bw.Flush(); err != nil {
			return nil, err
		}
	}
}

// relaySized relays a response whose body has a known length: the head
// through bw, then the body straight from the upstream connection, so
// that between two *net.TCPConn the copy splices.
func relaySized(c net.Conn, bw *bufio.Writer, resp *http.Response, upr *bufio.Reader, up net.Conn) error {
	fmt.Fprintf(bw, "HTTP/%d.%d %s\r\n", resp.ProtoMajor, resp.ProtoMinor, resp.Status)
	resp.Header.Set("Content-Length", strconv.FormatInt(resp.ContentLength, 10))
	if err := resp.Header.Write(bw); err != nil {
		return err
	}
	bw.WriteString("\r\n")
	n := min(int64(upr.Buffered()), resp.ContentLength)
	if _, err := io.CopyN(bw, upr, n); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if rest := resp.ContentLength - n; rest > 0 {
		if m, err := io.Copy(c, io.LimitReader(up, rest)); err != nil || m != rest {
			if err == nil {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
	}
	return nil
}

// bodyAllowed reports whether a response to method with status may carry
// a body (RFC 9112 §6.3).
func bodyAllowed(method string, status int) bool {
	return method != "HEAD" && status >= 200 && status != 204 && status != 304
}

func hostHeader(host string, port int) string {
	if port == 80 {
		return host
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// dialFor dials the decision's checked addresses.
func (p *Proxy) dialFor(d decision, port int) (net.Conn, error) {
	if d.unresolved {
		return nil, errNoAddress
	}
	return p.dial(p.ctx, d.addrs, port)
}

// connect serves a CONNECT: decide, dial, and only once the upstream
// connection is up answer 200 and splice ([ours]: the reference answers
// 200 before it connects, so a closed port looks like a dropped tunnel).
func (p *Proxy) connect(c net.Conn, br *bufio.Reader, req *http.Request, client string) {
	host, portStr, err := net.SplitHostPort(req.RequestURI)
	port, perr := strconv.Atoi(portStr)
	host = normalizeHost(host)
	if err != nil || perr != nil || port <= 0 || port > 65535 || !validHost(host) {
		writePlain(c, 400, "Bad Request", "", "invalid CONNECT target")
		return
	}
	r := Request{Protocol: "https_connect", Host: host, Port: port, Method: http.MethodConnect, Client: client}
	d := p.decide(r, func() (context.Context, func()) { return p.watchClient(c, br) })
	if !d.Allowed {
		switch d.Reason {
		case ReasonMethodNotAllowed:
			// The reference's text when it has no interception CA; ours
			// never intercepts (methodSafe).
			writePlain(c, 403, "Forbidden", "blocked-by-mitm-required", "MITM required for limited HTTPS.")
		default:
			writePlain(c, 403, "Forbidden", errorHeader(d.Reason), message(d.Reason))
		}
		return
	}
	up, err := p.dialFor(d, port)
	if err != nil {
		if isTimeout(err) {
			writePlain(c, 504, "Gateway Timeout", "", "upstream connect timed out")
		} else if errors.Is(err, syscall.ECONNREFUSED) {
			writePlain(c, 502, "Bad Gateway", "", "upstream connection refused")
		} else {
			writePlain(c, 502, "Bad Gateway", "", "upstream failure")
		}
		return
	}
	defer p.untrack(up)
	if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\ndate: "+httpDate()+"\r\n\r\n"); err != nil {
		return
	}
	if n := br.Buffered(); n > 0 {
		b, _ := br.Peek(n)
		if _, err := up.Write(b); err != nil {
			return
		}
	}
	pipe(c, up)
}

// watchClient returns a context that ends when the proxy closes or the
// client's connection ends while a review is pending, and the function
// that stops the watch (and waits for it). It only peeks, so no byte the
// client sends is lost.
func (p *Proxy) watchClient(c net.Conn, br *bufio.Reader) (context.Context, func()) {
	ctx, cancel := context.WithCancel(p.ctx)
	c.SetReadDeadline(time.Time{})
	var stopped atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := br.Peek(1); err != nil && !stopped.Load() {
			cancel()
		}
	}()
	return ctx, func() {
		stopped.Store(true)
		c.SetReadDeadline(time.Unix(1, 0))
		<-done
		c.SetReadDeadline(time.Time{})
		cancel()
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded)
}

func httpDate() string { return time.Now().UTC().Format(http.TimeFormat) }

// errorHeader is the x-proxy-error value of a refusal.
func errorHeader(reason string) string {
	switch reason {
	case ReasonDenied:
		return "blocked-by-denylist"
	case ReasonMethodNotAllowed:
		return "blocked-by-method-policy"
	}
	return "blocked-by-allowlist"
}

// message is the human text of a refusal.
func message(reason string) string {
	switch reason {
	case ReasonDenied:
		return "Domain denied by the sandbox policy."
	case ReasonNotAllowedLocal:
		return "Sandbox policy blocks local/private network addresses."
	case ReasonMethodNotAllowed:
		return "Method not allowed in limited mode."
	}
	return "Domain not in allowlist."
}

// writePlain writes a text/plain answer in the reference's header order
// and case; xerr, when not empty, is the x-proxy-error value.
func writePlain(c net.Conn, code int, status, xerr, body string) {
	writeAnswer(c, code, status, "text/plain", xerr, body)
}

func writeAnswer(c net.Conn, code int, status, ctype, xerr, body string) {
	var b strings.Builder
	b.Grow(160 + len(body))
	b.WriteString("HTTP/1.1 ")
	b.WriteString(strconv.Itoa(code))
	b.WriteByte(' ')
	b.WriteString(status)
	b.WriteString("\r\ncontent-type: ")
	b.WriteString(ctype)
	if xerr != "" {
		b.WriteString("\r\nx-proxy-error: ")
		b.WriteString(xerr)
	}
	b.WriteString("\r\ncontent-length: ")
	b.WriteString(strconv.Itoa(len(body)))
	b.WriteString("\r\ndate: ")
	b.WriteString(httpDate())
	b.WriteString("\r\n\r\n")
	b.WriteString(body)
	c.SetWriteDeadline(time.Now().Add(DefaultHandshakeTimeout))
	io.WriteString(c, b.String())
	c.SetWriteDeadline(time.Time{})
}

// writeBlockedJSON writes the 403 of a refused plain HTTP request: body A
// of the spec, members in the reference's order.
func writeBlockedJSON(c net.Conn, r Request, o Outcome) {
	var b strings.Builder
	b.WriteString(`{"status":"blocked","host":`)
	b.WriteString(jsonString(r.Host))
	b.WriteString(`,"reason":"`)
	b.WriteString(o.Reason)
	b.WriteString(`","decision":"deny","source":"`)
	b.WriteString(o.Source)
	b.WriteString(`","protocol":"`)
	b.WriteString(r.Protocol)
	b.WriteString(`","port":`)
	b.WriteString(strconv.Itoa(r.Port))
	b.WriteString(`,"message":"`)
	b.WriteString(message(o.Reason))
	b.WriteString(`"}`)
	writeAnswer(c, 403, "Forbidden", "application/json", errorHeader(o.Reason), b.String())
}

// jsonString encodes s as a JSON string, without HTML escaping (as the
// reference's serializer writes it).
func jsonString(s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSuffix(buf.String(), "\n")
}
