package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"
	"github.com/codexec/codex/wire"
	"golang.org/x/sys/unix"
)

// RPCError is a JSON-RPC error object sent by a server.
type RPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("rpc error %d: %s", e.Code, e.Message) }

// Response is a server's answer to one request, stamped with the time its
// frame was fully read.
type Response struct {
	Result json.RawMessage
	Err    *RPCError
	At     time.Time
}

// Proc is the client-side view of one process started through a Client. The
// reader goroutine updates it; other goroutines read it only after Closed
// (or Exited) is closed, which orders the accesses.
type Proc struct {
	ID string
	// Decode makes the reader decode every chunk and check that it is all
	// zero bytes (used by tail completeness); otherwise only the decoded
	// length is computed from the base64 length.
	Decode bool

	Start       time.Time // when the process/start frame was written
	FirstOutput time.Time // first process/output (zero if none)
	ExitedAt    time.Time
	ClosedAt    time.Time

	Bytes    int64 // decoded payload bytes received
	Chunks   int   // process/output notifications received
	NonZero  bool  // a decoded chunk contained a non-zero byte (Decode only)
	ExitCode *int  // from process/exited
	lastSeq  uint64
	lastKind string // method of the notification that carried lastSeq

	exited chan struct{}
	closed chan struct{}
}

// Closed is closed when process/closed has arrived.
func (p *Proc) Closed() <-chan struct{} { return p.closed }

// Wait blocks until process/closed arrives, ctx ends or timeout passes.
func (p *Proc) Wait(ctx context.Context, timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.closed:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return fmt.Errorf("process %s: no process/closed within %v", p.ID, timeout)
	}
}

// Violations counts protocol anomalies seen by a Client's reader.
type Violations struct {
	OutputAfterClosed atomic.Int64 // process/output after process/closed
	SeqDisorder       atomic.Int64 // a notification seq not above the previous one
	ExitedAfterClosed atomic.Int64 // process/exited after process/closed
	MissingExited     atomic.Int64 // process/closed without an earlier process/exited
	Stray             atomic.Int64 // notifications for unknown process ids

	mu    sync.Mutex
	Notes []string // the first few anomalies, described
}

// note records a description of an anomaly (the first 20 are kept).
func (v *Violations) note(format string, args ...any) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.Notes) < 20 {
		v.Notes = append(v.Notes, fmt.Sprintf(format, args...))
	}
}

// Client is a minimal exec-server JSON-RPC client over one WebSocket.
// Requests may be sent from any goroutine; one reader goroutine routes
// responses by id and notifications by processId.
type Client struct {
	conn   *websocket.Conn
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when the reader goroutine returns
	viol   *Violations

	nextID atomic.Int64

	mu      sync.Mutex
	pending map[int64]chan *Response
	procs   map[string]*Proc
	gate    chan struct{} // non-nil while reading is paused
	readErr error
}

// quickAckConn re-arms TCP_QUICKACK after every read so that the kernel
// acknowledges incoming segments at once. Servers that write with Nagle on
// would otherwise wait for the client's delayed ACK (about 40 ms).
type quickAckConn struct {
	*net.TCPConn
	raw syscall.RawConn
}

func (c *quickAckConn) Read(p []byte) (int, error) {
	n, err := c.TCPConn.Read(p)
	if n > 0 {
		c.quickAck()
	}
	return n, err
}

func (c *quickAckConn) quickAck() {
	_ = c.raw.Control(func(fd uintptr) {
		_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_QUICKACK, 1)
	})
}

// Dial connects to url, performs the initialize/initialized handshake and
// starts the reader goroutine. viol collects anomalies (may be shared by
// several clients of one server).
func Dial(ctx context.Context, url string, quickAck bool, viol *Violations) (*Client, error) {
	dialer := &net.Dialer{}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			nc, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			tcp, ok := nc.(*net.TCPConn)
			if !ok || !quickAck {
				return nc, nil
			}
			raw, err := tcp.SyscallConn()
			if err != nil {
				return nc, nil
			}
			qc := &quickAckConn{TCPConn: tcp, raw: raw}
			qc.quickAck()
			return qc, nil
		},
		DisableCompression: true,
	}
	defer tr.CloseIdleConnections()
	dctx, dcancel := context.WithTimeout(ctx, 15*time.Second)
	defer dcancel()
	conn, _, err := websocket.Dial(dctx, url, &websocket.DialOptions{
		HTTPClient:      &http.Client{Transport: tr},
		CompressionMode: websocket.CompressionDisabled,
	})
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", url, err)
	}
	conn.SetReadLimit(1 << 30)
	if viol == nil {
		viol = &Violations{}
	}
	cctx, cancel := context.WithCancel(context.Background())
	c := &Client{
		conn:    conn,
		ctx:     cctx,
		cancel:  cancel,
		done:    make(chan struct{}),
		viol:    viol,
		pending: make(map[int64]chan *Response),
		procs:   make(map[string]*Proc),
	}
	go c.readLoop()
	hctx, hcancel := context.WithTimeout(ctx, 15*time.Second)
	defer hcancel()
	if _, err := c.Call(hctx, wire.MethodInitialize, map[string]any{"clientName": "bench"}); err != nil {
		c.Close()
		return nil, fmt.Errorf("initialize: %w", err)
	}
	if err := c.Notify(hctx, wire.MethodInitialized, map[string]any{}); err != nil {
		c.Close()
		return nil, fmt.Errorf("initialized: %w", err)
	}
	return c, nil
}

// Alive reports whether the reader goroutine is still running.
func (c *Client) Alive() bool {
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// Close closes the WebSocket and waits for the reader goroutine.
func (c *Client) Close() {
	c.Resume()
	done := make(chan struct{})
	go func() {
		_ = c.conn.Close(websocket.StatusNormalClosure, "")
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
	}
	c.cancel()
	<-c.done
	<-done
}

// Pause makes the reader goroutine stop calling Read after the message it
// is reading now. Resume undoes it.
func (c *Client) Pause() {
	c.mu.Lock()
	if c.gate == nil {
		c.gate = make(chan struct{})
	}
	c.mu.Unlock()
}

// Resume lets a paused reader continue.
func (c *Client) Resume() {
	c.mu.Lock()
	if c.gate != nil {
		close(c.gate)
		c.gate = nil
	}
	c.mu.Unlock()
}

// request is the wire form of a JSON-RPC request (no "jsonrpc" member).
type request struct {
	ID     int64  `json:"id"`
	Method string `json:"method"`
	Params any    `json:"params"`
}

// notification is the wire form of a client notification.
type notification struct {
	Method string `json:"method"`
	Params any    `json:"params"`
}

// Send writes a request and returns the channel its response will arrive on
// and the time the frame was handed to the socket.
func (c *Client) Send(ctx context.Context, method string, params any) (<-chan *Response, time.Time, error) {
	id := c.nextID.Add(1)
	data, err := json.Marshal(request{ID: id, Method: method, Params: params})
	if err != nil {
		return nil, time.Time{}, err
	}
	ch := make(chan *Response, 1)
	c.mu.Lock()
	if c.readErr != nil {
		err := c.readErr
		c.mu.Unlock()
		return nil, time.Time{}, fmt.Errorf("connection is down: %w", err)
	}
	c.pending[id] = ch
	c.mu.Unlock()
	sent := time.Now()
	if err := c.conn.Write(ctx, websocket.MessageText, data); err != nil {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return nil, sent, fmt.Errorf("write %s: %w", method, err)
	}
	return ch, sent, nil
}

// Await waits for a response from Send.
func (c *Client) Await(ctx context.Context, ch <-chan *Response) (*Response, error) {
	select {
	case r, ok := <-ch:
		if !ok {
			c.mu.Lock()
			err := c.readErr
			c.mu.Unlock()
			return nil, fmt.Errorf("connection lost: %w", err)
		}
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Call sends a request and waits for its result; an error response becomes
// an *RPCError.
func (c *Client) Call(ctx context.Context, method string, params any) (*Response, error) {
	ch, _, err := c.Send(ctx, method, params)
	if err != nil {
		return nil, err
	}
	r, err := c.Await(ctx, ch)
	if err != nil {
		return nil, err
	}
	if r.Err != nil {
		return r, r.Err
	}
	return r, nil
}

// Notify sends a client notification.
func (c *Client) Notify(ctx context.Context, method string, params any) error {
	data, err := json.Marshal(notification{Method: method, Params: params})
	if err != nil {
		return err
	}
	return c.conn.Write(ctx, websocket.MessageText, data)
}

// StartParams are the process/start parameters the benchmark sends.
type StartParams struct {
	ProcessID string            `json:"processId"`
	Argv      []string          `json:"argv"`
	Cwd       string            `json:"cwd"`
	Env       map[string]string `json:"env"`
	TTY       bool              `json:"tty"`
	PipeStdin bool              `json:"pipeStdin"`
	Arg0      *string           `json:"arg0"`
	Sandbox   any               `json:"sandbox,omitempty"`
}

var procCounter atomic.Int64

// newProcessID returns a process id that is unique within this run.
func newProcessID() string {
	return "bench-" + strconv.FormatInt(procCounter.Add(1), 10)
}

// benchEnv is the environment of every benchmark child.
var benchEnv = map[string]string{"PATH": "/usr/bin:/bin"}

// StartAsync registers a new process and writes its process/start request
// with params (the process id is filled in). The caller awaits the
// returned channel.
func (c *Client) StartAsync(ctx context.Context, params StartParams, decode bool) (*Proc, <-chan *Response, error) {
	p := &Proc{
		ID:     newProcessID(),
		Decode: decode,
		exited: make(chan struct{}),
		closed: make(chan struct{}),
	}
	c.mu.Lock()
	c.procs[p.ID] = p
	c.mu.Unlock()
	params.ProcessID = p.ID
	// Start must be set before the reader can see any notification of the
	// process; the response cannot arrive before the write returns.
	id := c.nextID.Add(1)
	data, err := json.Marshal(request{ID: id, Method: wire.MethodProcessStart, Params: params})
	if err != nil {
		c.Forget(p)
		return nil, nil, err
	}
	ch := make(chan *Response, 1)
	c.mu.Lock()
	if c.readErr != nil {
		err := c.readErr
		c.mu.Unlock()
		c.Forget(p)
		return nil, nil, fmt.Errorf("connection is down: %w", err)
	}
	c.pending[id] = ch
	c.mu.Unlock()
	p.Start = time.Now()
	if err := c.conn.Write(ctx, websocket.MessageText, data); err != nil {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		c.Forget(p)
		return nil, nil, fmt.Errorf("write process/start: %w", err)
	}
	return p, ch, nil
}

// Start starts a process (cwd /tmp, no sandbox) and waits for the
// process/start response. It returns the response time too.
func (c *Client) Start(ctx context.Context, argv []string, tty, decode bool) (*Proc, *Response, error) {
	return c.StartWith(ctx, StartParams{Argv: argv, Cwd: "file:///tmp", Env: benchEnv, TTY: tty}, decode)
}

// StartWith is Start with explicit parameters.
func (c *Client) StartWith(ctx context.Context, params StartParams, decode bool) (*Proc, *Response, error) {
	p, ch, err := c.StartAsync(ctx, params, decode)
	if err != nil {
		return nil, nil, err
	}
	r, err := c.Await(ctx, ch)
	if err == nil && r.Err != nil {
		err = r.Err
	}
	if err != nil {
		c.Forget(p)
		return nil, r, fmt.Errorf("process/start %v: %w", params.Argv, err)
	}
	return p, r, nil
}

// Terminate sends process/terminate and returns the "running" result.
func (c *Client) Terminate(ctx context.Context, p *Proc) (bool, error) {
	r, err := c.Call(ctx, wire.MethodProcessTerminate, map[string]any{"processId": p.ID})
	if err != nil {
		return false, err
	}
	var res struct {
		Running bool `json:"running"`
	}
	err = json.Unmarshal(r.Result, &res)
	return res.Running, err
}

// Forget stops routing notifications to p.
func (c *Client) Forget(p *Proc) {
	c.mu.Lock()
	if c.procs[p.ID] == p {
		delete(c.procs, p.ID)
	}
	c.mu.Unlock()
}

// readLoop reads frames until the connection ends, honouring Pause.
func (c *Client) readLoop() {
	defer close(c.done)
	var buf bytes.Buffer
	buf.Grow(256 << 10)
	var scratch []byte
	for {
		c.mu.Lock()
		gate := c.gate
		c.mu.Unlock()
		if gate != nil {
			select {
			case <-gate:
			case <-c.ctx.Done():
				c.fail(c.ctx.Err())
				return
			}
		}
		_, r, err := c.conn.Reader(c.ctx)
		if err != nil {
			c.fail(err)
			return
		}
		buf.Reset()
		if _, err := buf.ReadFrom(r); err != nil {
			c.fail(err)
			return
		}
		now := time.Now()
		scratch = c.handle(buf.Bytes(), now, scratch)
	}
}

// fail records the read error and releases every waiter.
func (c *Client) fail(err error) {
	if err == nil {
		err = errors.New("reader stopped")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.readErr == nil {
		c.readErr = err
	}
	for id, ch := range c.pending {
		close(ch)
		delete(c.pending, id)
	}
}

var (
	keyOutput    = []byte(`"method":"` + wire.MethodProcessOutput + `"`)
	keyProcessID = []byte(`"processId":"`)
	keyChunk     = []byte(`"chunk":"`)
	keySeq       = []byte(`"seq":`)
)

// handle processes one frame. process/output is scanned without a JSON
// decoder; everything else is small and decoded with encoding/json.
func (c *Client) handle(frame []byte, now time.Time, scratch []byte) []byte {
	if bytes.Contains(frame, keyOutput) {
		return c.handleOutput(frame, now, scratch)
	}
	var env struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
		Result json.RawMessage `json:"result"`
		Error  *RPCError       `json:"error"`
	}
	if err := json.Unmarshal(frame, &env); err != nil {
		return scratch
	}
	if env.Method != "" {
		c.handleNotification(env.Method, env.Params, now)
		return scratch
	}
	id, err := strconv.ParseInt(string(env.ID), 10, 64)
	if err != nil {
		return scratch
	}
	c.mu.Lock()
	ch := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if ch != nil { // env.Result is a copy: json.RawMessage copies on decode
		ch <- &Response{Result: env.Result, Err: env.Error, At: now}
	}
	return scratch
}

// stringAfter returns the JSON string value that follows key (which ends in
// the opening quote). Values here never contain escapes.
func stringAfter(frame, key []byte) []byte {
	i := bytes.Index(frame, key)
	if i < 0 {
		return nil
	}
	rest := frame[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return nil
	}
	return rest[:j]
}

// uintAfter parses the unsigned integer that follows key.
func uintAfter(frame, key []byte) (uint64, bool) {
	i := bytes.Index(frame, key)
	if i < 0 {
		return 0, false
	}
	rest := frame[i+len(key):]
	for len(rest) > 0 && rest[0] == ' ' {
		rest = rest[1:]
	}
	var v uint64
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		v = v*10 + uint64(rest[n]-'0')
		n++
	}
	return v, n > 0
}

// base64Len is the decoded length of padded standard base64 text.
func base64Len(b []byte) int64 {
	n := int64(len(b)) / 4 * 3
	if len(b) > 0 && b[len(b)-1] == '=' {
		n--
		if len(b) > 1 && b[len(b)-2] == '=' {
			n--
		}
	}
	return n
}

func (c *Client) lookup(id []byte) *Proc {
	c.mu.Lock()
	p := c.procs[string(id)]
	c.mu.Unlock()
	return p
}

// checkSeq records a notification seq and counts disorder.
func (c *Client) checkSeq(p *Proc, seq uint64, ok bool, method string) {
	if !ok {
		return
	}
	if seq <= p.lastSeq {
		c.viol.SeqDisorder.Add(1)
		c.viol.note("%s of %s has seq %d after %s seq %d", method, p.ID, seq, p.lastKind, p.lastSeq)
	}
	p.lastSeq, p.lastKind = seq, method
}

func (c *Client) handleOutput(frame []byte, now time.Time, scratch []byte) []byte {
	p := c.lookup(stringAfter(frame, keyProcessID))
	if p == nil {
		c.viol.Stray.Add(1)
		return scratch
	}
	if !p.ClosedAt.IsZero() {
		c.viol.OutputAfterClosed.Add(1)
		c.viol.note("process/output of %s after process/closed", p.ID)
	}
	seq, ok := uintAfter(frame, keySeq)
	c.checkSeq(p, seq, ok, "process/output")
	chunk := stringAfter(frame, keyChunk)
	if bytes.IndexByte(chunk, '\\') >= 0 { // escaped JSON: take the slow path
		var n struct {
			Params struct {
				Chunk []byte `json:"chunk"`
			} `json:"params"`
		}
		if err := json.Unmarshal(frame, &n); err == nil {
			chunk = []byte(base64.StdEncoding.EncodeToString(n.Params.Chunk))
		}
	}
	if p.FirstOutput.IsZero() {
		p.FirstOutput = now
	}
	p.Chunks++
	if p.Decode {
		need := base64.StdEncoding.DecodedLen(len(chunk))
		if cap(scratch) < need {
			scratch = make([]byte, need)
		}
		n, err := base64.StdEncoding.Decode(scratch[:need], chunk)
		if err != nil {
			p.NonZero = true
		}
		for _, b := range scratch[:n] {
			if b != 0 {
				p.NonZero = true
				break
			}
		}
		p.Bytes += int64(n)
	} else {
		p.Bytes += base64Len(chunk)
	}
	return scratch
}

func (c *Client) handleNotification(method string, params json.RawMessage, now time.Time) {
	var n struct {
		ProcessID string  `json:"processId"`
		Seq       *uint64 `json:"seq"`
		ExitCode  *int    `json:"exitCode"`
		Chunk     []byte  `json:"chunk"`
	}
	if err := json.Unmarshal(params, &n); err != nil {
		return
	}
	p := c.lookup([]byte(n.ProcessID))
	if p == nil {
		if method == wire.MethodProcessOutput || method == wire.MethodProcessExited || method == wire.MethodProcessClosed {
			c.viol.Stray.Add(1)
		}
		return
	}
	if n.Seq != nil {
		c.checkSeq(p, *n.Seq, true, method)
	}
	switch method {
	case wire.MethodProcessOutput: // only reached if the fast path missed it
		if !p.ClosedAt.IsZero() {
			c.viol.OutputAfterClosed.Add(1)
		}
		if p.FirstOutput.IsZero() {
			p.FirstOutput = now
		}
		p.Chunks++
		p.Bytes += int64(len(n.Chunk))
	case wire.MethodProcessExited:
		if !p.ClosedAt.IsZero() {
			c.viol.ExitedAfterClosed.Add(1)
			c.viol.note("process/exited of %s after process/closed", p.ID)
			return
		}
		if p.ExitedAt.IsZero() {
			p.ExitedAt = now
			p.ExitCode = n.ExitCode
			close(p.exited)
		}
	case wire.MethodProcessClosed:
		if !p.ClosedAt.IsZero() {
			return
		}
		if p.ExitedAt.IsZero() {
			c.viol.MissingExited.Add(1)
			c.viol.note("process/closed of %s without process/exited", p.ID)
		}
		p.ClosedAt = now
		close(p.closed)
	}
}
