package unifiedexec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"strings"
	"time"

	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wire"
	"github.com/google/uuid"
)

// The typed calls below block until the server answers, ctx is done, or
// the connection fails. While the client recovers a lost connection they
// wait for the outcome; idempotent calls (reads, resize, closeStdin, writes
// with a writeId, environment and fs reads) are sent once more when the
// connection is lost during the call, the others fail with ErrTransport.
// Wire errors come back as *WireError, which also matches *rpc.Error.

// call sends one request on the current connection. When the connection
// is lost during the call, an idempotent call (retry true) is sent once more
// on the recovered connection; any other call fails with ErrTransport.
func (c *Client) call(ctx context.Context, method string, params, result any, retry bool) error {
	for attempt := 0; ; attempt++ {
		conn, err := c.current(ctx)
		if err != nil {
			return err
		}
		err = conn.Call(ctx, method, params, result)
		if err == nil || !errors.Is(err, rpc.ErrClosed) {
			return wireError(method, err)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !retry || attempt > 0 {
			return fmt.Errorf("%s: %w", method, transportError("connection lost during the call"))
		}
		c.waitReplaced(ctx, conn)
	}
}

// waitReplaced waits until conn is no longer the current connection.
func (c *Client) waitReplaced(ctx context.Context, conn *rpc.Conn) {
	select {
	case <-conn.Done():
	case <-ctx.Done():
		return
	}
	for {
		c.mu.Lock()
		same, changed, done := c.conn == conn, c.changed, c.closed || c.failed != nil
		c.mu.Unlock()
		if !same || done {
			return
		}
		// The monitor has not noticed the loss yet: it will change conn,
		// or fail, or Close will have marked the client closed.
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}

// Start registers a Process and sends process/start (docs/protocol.md §6.5). The
// id is registered before the request, so no notification is missed; it
// is unregistered when the start fails. Start is never replayed.
func (c *Client) Start(ctx context.Context, o StartOptions) (*Process, error) {
	if len(o.Argv) == 0 {
		return nil, fmt.Errorf("process/start: argv must not be empty")
	}
	id := o.ProcessID
	if id == "" {
		id = fmt.Sprintf("%d-%s", c.ids.Add(1), uuid.NewString())
	}
	cwdStr := o.Cwd
	if cwdStr == "" {
		cwdStr = c.Environment().Cwd
	}
	cwd, err := wire.ParsePath(cwdStr)
	if err != nil {
		return nil, fmt.Errorf("process/start: cwd %q: %w", cwdStr, err)
	}
	env, policy, err := startEnv(o)
	if err != nil {
		return nil, err
	}
	params := wire.StartParams{
		ProcessID: id, Argv: o.Argv, Cwd: cwd, Env: env, TTY: o.TTY,
		PipeStdin: o.PipeStdin && !o.TTY, EnvPolicy: policy, Size: o.Size,
	}
	if o.Sandbox != nil {
		params.Sandbox = json.RawMessage(o.Sandbox)
	}
	p := newProcess(c, id, o)
	c.mu.Lock()
	if err := c.stateErrLocked(); err != nil {
		c.mu.Unlock()
		p.stopDispatcher()
		return nil, err
	}
	switch {
	case c.procs[id] != nil:
		c.mu.Unlock()
		p.stopDispatcher()
		return nil, fmt.Errorf("process/start: process id %q is already registered", id)
	}
	c.procs[id] = p
	c.mu.Unlock()
	var res wire.StartResult
	if err := c.call(ctx, wire.MethodProcessStart, params, &res, false); err != nil {
		c.unregister(p)
		p.stopDispatcher()
		return nil, fmt.Errorf("process/start: %w", err)
	}
	p.mu.Lock()
	p.sandboxType = res.SandboxType
	p.mu.Unlock()
	return p, nil
}

// startEnv is the env and envPolicy sent for o (docs/client.md §3.6): by
// default o.Env laid over the server's environment, as CommandExec and Run
// give it; o.EnvPolicy when set; the caller's environment only when
// o.InheritEnv asks for it.
func startEnv(o StartOptions) (map[string]string, *wire.EnvPolicy, error) {
	env := o.Env
	if env == nil {
		env = map[string]string{}
	}
	switch {
	case o.InheritEnv && o.EnvPolicy != nil:
		return nil, nil, errors.New("process/start: InheritEnv and EnvPolicy exclude each other")
	case o.InheritEnv:
		inherited := map[string]string{}
		for _, kv := range os.Environ() {
			if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
				inherited[k] = v
			}
		}
		maps.Copy(inherited, o.Env)
		return inherited, nil, nil
	case o.EnvPolicy != nil:
		return env, o.EnvPolicy, nil
	}
	return env, ServerEnv(), nil
}

// ServerEnv is the envPolicy of the default environment: all of the
// server's own environment, less the names the server never hands on
// (docs/protocol.md §7.3).
func ServerEnv() *wire.EnvPolicy {
	return &wire.EnvPolicy{Inherit: "all", Exclude: []string{}, Set: map[string]string{}, IncludeOnly: []string{}}
}

// ReadRequest is the params of process/read; nil pointers are sent as null.
type ReadRequest struct {
	ProcessID string
	AfterSeq  uint64
	MaxBytes  *uint64
	Wait      time.Duration
}

// Read sends process/read (docs/protocol.md §6.6). It is retried once after a
// recovered connection loss.
func (c *Client) Read(ctx context.Context, r ReadRequest) (wire.ReadResult, error) {
	wait := uint64(r.Wait / time.Millisecond)
	params := wire.ReadParams{ProcessID: r.ProcessID, AfterSeq: &r.AfterSeq, MaxBytes: r.MaxBytes, WaitMs: &wait}
	var res wire.ReadResult
	err := c.call(ctx, wire.MethodProcessRead, params, &res, true)
	return res, err
}

// WriteRequest is the params of process/write. WriteID should be unique
// per process; the server drops a repeated id, which makes retries safe.
type WriteRequest struct {
	ProcessID  string
	Data       []byte
	WriteID    string
	CloseStdin bool
}

// Write sends process/write and returns the status ("accepted",
// "unknownProcess", "starting" or "stdinClosed"). An empty WriteID is
// replaced by a fresh one. It is retried once after a recovered connection
// loss, with the same writeId.
func (c *Client) Write(ctx context.Context, w WriteRequest) (string, error) {
	if w.WriteID == "" {
		w.WriteID = fmt.Sprintf("w%d", c.wrIDs.Add(1))
	}
	params := wire.WriteParams{ProcessID: w.ProcessID, Chunk: wire.Bytes(w.Data), WriteID: &w.WriteID, CloseStdin: w.CloseStdin}
	if params.Chunk == nil {
		params.Chunk = wire.Bytes{}
	}
	var res wire.WriteResult
	err := c.call(ctx, wire.MethodProcessWrite, params, &res, true)
	return res.Status, err
}

// CloseStdin sends process/closeStdin [ext] and returns the write status.
func (c *Client) CloseStdin(ctx context.Context, processID string) (string, error) {
	var res wire.WriteResult
	err := c.call(ctx, wire.MethodProcessCloseStdin, wire.ProcessIDParams{ProcessID: processID}, &res, true)
	return res.Status, err
}

// Signal names a signal of process/signal (docs/protocol.md §6.8). The server
// accepts SignalInterrupt; it answers another name with -32602.
type Signal string

// SignalInterrupt sends SIGINT to the process group.
const SignalInterrupt Signal = "interrupt"

// Signal sends process/signal {signal: sig}. An empty sig is refused
// without a request. It is not replayed.
func (c *Client) Signal(ctx context.Context, processID string, sig Signal) error {
	if sig == "" {
		return fmt.Errorf("process/signal: signal must not be empty")
	}
	return c.call(ctx, wire.MethodProcessSignal, wire.SignalParams{ProcessID: processID, Signal: string(sig)}, nil, false)
}

// Terminate sends process/terminate: a force kill when graceful is 0,
// otherwise the graceful mode [ext] with graceful as timeout. It returns
// whether the process was running. It is not replayed.
func (c *Client) Terminate(ctx context.Context, processID string, graceful time.Duration) (bool, error) {
	params := wire.TerminateParams{ProcessID: processID}
	if graceful > 0 {
		ms := uint64(graceful / time.Millisecond)
		params.Mode = &wire.TerminateMode{Type: "graceful", TimeoutMs: &ms}
	}
	var res wire.TerminateResult
	err := c.call(ctx, wire.MethodProcessTerminate, params, &res, false)
	return res.Running, err
}

// Resize sends process/resize [ext].
func (c *Client) Resize(ctx context.Context, processID string, size wire.Size) error {
	params := wire.ResizeParams{ProcessID: processID, Size: size}
	return c.call(ctx, wire.MethodProcessResize, params, nil, true)
}

// EnvironmentInfo sends environment/info.
func (c *Client) EnvironmentInfo(ctx context.Context) (wire.EnvironmentInfo, error) {
	var res wire.EnvironmentInfo
	err := c.call(ctx, wire.MethodEnvironmentInfo, nil, &res, true)
	return res, err
}

// EnvironmentStatus sends environment/status and returns the status.
func (c *Client) EnvironmentStatus(ctx context.Context) (string, error) {
	var res wire.StatusResult
	err := c.call(ctx, wire.MethodEnvironmentStatus, nil, &res, true)
	return res.Status, err
}
