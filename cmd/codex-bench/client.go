// The bench Client: a minimal exec-server client over one WebSocket, its
// dialing (with TCP_QUICKACK), pausing of reads, and Close.

package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"
	"github.com/codexec/codex/wire"
	"golang.org/x/sys/unix"
)

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
