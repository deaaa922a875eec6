// Processes of the bench Client: starting one (process/start), the Proc that
// collects its output and events, terminating and forgetting it.

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/codexec/codex/wire"
)

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
