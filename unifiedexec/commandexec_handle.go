package unifiedexec

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wire"
	"github.com/google/uuid"
)

var (
	// ErrCommandExecLost is matched (errors.Is) by the error of a
	// command/exec whose connection was lost. Its commands belong to that
	// connection: the server kills them when it ends, and unlike the
	// processes of process/start they are not resumed on the recovered
	// connection. The error also matches ErrTransport.
	ErrCommandExecLost = fmt.Errorf("%w: a command/exec ends with its connection and is not resumed", ErrTransport)
	// ErrCommandExecDone is returned by the follow-up calls of a
	// CommandExecHandle whose command has answered.
	ErrCommandExecDone = errors.New("command/exec has already ended")
)

// stopTimeout bounds the terminate sent when CommandExec's ctx ends.
const stopTimeout = 2 * time.Second

// CommandExecHandle is a running command/exec. Its follow-up calls go to
// the connection it was started on. It needs no Close: it ends with its
// command, with the connection, or with the Client, whichever is first.
type CommandExecHandle struct {
	c        *Client
	conn     *rpc.Conn
	id       string
	onOutput func(CommandExecOutput)
	done     chan struct{} // closed once res/err are final and OnOutput has had every delta

	mu    sync.Mutex
	queue []CommandExecOutput // guarded by mu: deltas not yet given to OnOutput
	ended bool                // guarded by mu: the command answered (or its call failed)
	res   CommandExecResult   // guarded by mu
	err   error               // guarded by mu
	wake  chan struct{}
}

// StartCommandExec sends command/exec and returns once the request is
// written: follow-up calls made after it returns reach the server after
// the command. The server's answer, success or error (validation included),
// comes from Wait. ProcessID, when empty, is generated. StartCommandExec
// waits while the client recovers a lost connection.
func (c *Client) StartCommandExec(ctx context.Context, req CommandExecRequest) (*CommandExecHandle, error) {
	id := req.ProcessID
	if id == "" {
		id = fmt.Sprintf("cx-%d-%s", c.ids.Add(1), uuid.NewString())
	}
	params, err := req.params(id)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", wire.MethodCommandExec, err)
	}
	conn, err := c.current(ctx)
	if err != nil {
		return nil, err
	}
	h := &CommandExecHandle{c: c, conn: conn, id: id, onOutput: req.OnOutput, done: make(chan struct{}), wake: make(chan struct{}, 1)}
	c.mu.Lock()
	if err := c.stateErrLocked(); err != nil {
		c.mu.Unlock()
		return nil, err
	}
	if c.cmdExecs[id] != nil {
		c.mu.Unlock()
		return nil, fmt.Errorf("%s: process id %q is already running on this client", wire.MethodCommandExec, id)
	}
	if c.cmdExecs == nil {
		c.cmdExecs = map[string]*CommandExecHandle{}
	}
	c.cmdExecs[id] = h
	c.wg.Add(1) // under mu: Close has not begun waiting
	c.mu.Unlock()
	pend, err := conn.Start(ctx, wire.MethodCommandExec, params)
	if err != nil {
		c.unregisterCommandExec(h)
		c.wg.Done()
		return nil, h.callError(wire.MethodCommandExec, err)
	}
	if h.onOutput != nil {
		go h.dispatch()
	}
	go func() {
		defer c.wg.Done()
		var res CommandExecResult
		// Ends with the answer, or with the connection (which Close ends).
		err := pend.Await(context.Background(), &res)
		c.unregisterCommandExec(h)
		h.end(res, h.callError(wire.MethodCommandExec, err))
	}()
	return h, nil
}

// ProcessID returns the command's processId on its connection.
func (h *CommandExecHandle) ProcessID() string { return h.id }

// Wait returns the command's result once it has answered and OnOutput has
// returned for every delta. Errors answered by the server are *WireError;
// a lost connection gives an error matching ErrCommandExecLost, a closed
// Client ErrClosed. When ctx ends first it returns ctx's error and leaves
// the command running. Wait may be called any number of times.
func (h *CommandExecHandle) Wait(ctx context.Context) (CommandExecResult, error) {
	select {
	case <-h.done:
	case <-ctx.Done():
		return CommandExecResult{}, ctx.Err()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.res, h.err
}

// Write sends data to the command's stdin (command/exec/write); it needs
// StreamStdin or TTY.
func (h *CommandExecHandle) Write(ctx context.Context, data []byte) error {
	d := base64.StdEncoding.EncodeToString(data)
	return h.control(ctx, wire.MethodCommandExecWrite, wire.CommandExecWriteParams{ProcessID: h.id, DeltaBase64: &d})
}

// CloseStdin closes the command's stdin (on a PTY: a newline, then EOF).
func (h *CommandExecHandle) CloseStdin(ctx context.Context) error {
	return h.control(ctx, wire.MethodCommandExecWrite, wire.CommandExecWriteParams{ProcessID: h.id, CloseStdin: true})
}

// Resize sets the size of the command's PTY.
func (h *CommandExecHandle) Resize(ctx context.Context, size wire.Size) error {
	return h.control(ctx, wire.MethodCommandExecResize, wire.CommandExecResizeParams{ProcessID: h.id, Size: wire.TermSize{Rows: size.Rows, Cols: size.Cols}})
}

// Terminate kills the command (SIGKILL); its result then has exit code 137.
func (h *CommandExecHandle) Terminate(ctx context.Context) error {
	return h.control(ctx, wire.MethodCommandExecTerminate, wire.CommandExecTerminateParams{ProcessID: h.id})
}

// control sends a follow-up on the command's connection. Once the command
// has answered its id may name another command, so nothing is sent.
func (h *CommandExecHandle) control(ctx context.Context, method string, params any) error {
	h.mu.Lock()
	ended := h.ended
	h.mu.Unlock()
	if ended {
		return fmt.Errorf("%s: %w", method, ErrCommandExecDone)
	}
	return h.callError(method, h.conn.Call(ctx, method, params, nil))
}

// stop terminates the command for a caller that gave up on it, within
// stopTimeout; failures are ignored (it may have ended meanwhile).
func (h *CommandExecHandle) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	_ = h.Terminate(ctx)
}

// callError maps the error of a call on h's connection: wire errors to
// *WireError, the connection's end to ErrClosed (the Client was closed) or
// ErrCommandExecLost.
func (h *CommandExecHandle) callError(method string, err error) error {
	if !errors.Is(err, rpc.ErrClosed) {
		return wireError(method, err)
	}
	if h.c.ctx.Err() != nil {
		return ErrClosed
	}
	return fmt.Errorf("%s %q: %w", method, h.id, ErrCommandExecLost)
}

// deliver queues one delta for OnOutput (from the connection's reading
// goroutine, before that goroutine can see the command's answer).
func (h *CommandExecHandle) deliver(o CommandExecOutput) {
	if h.onOutput == nil {
		return
	}
	h.mu.Lock()
	if !h.ended {
		h.queue = append(h.queue, o)
	}
	h.mu.Unlock()
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// end records the answer. Done closes now, or after OnOutput has had the
// queued deltas.
func (h *CommandExecHandle) end(res CommandExecResult, err error) {
	h.mu.Lock()
	h.ended, h.res, h.err = true, res, err
	h.mu.Unlock()
	if h.onOutput == nil {
		close(h.done)
		return
	}
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// dispatch runs OnOutput in order; it returns once the answer has come and
// the queue is empty, then closes done.
func (h *CommandExecHandle) dispatch() {
	for {
		h.mu.Lock()
		q, ended := h.queue, h.ended
		h.queue = nil
		h.mu.Unlock()
		for _, o := range q {
			h.onOutput(o)
		}
		if ended && len(q) == 0 {
			close(h.done)
			return
		}
		if len(q) == 0 {
			<-h.wake
		}
	}
}

// routeCommandExec hands a delta to the live handle of id; others are
// dropped.
func (c *Client) routeCommandExec(id string, o CommandExecOutput) {
	c.mu.Lock()
	h := c.cmdExecs[id]
	c.mu.Unlock()
	if h != nil {
		h.deliver(o)
	}
}

// unregisterCommandExec removes h from the table of live commands.
func (c *Client) unregisterCommandExec(h *CommandExecHandle) {
	c.mu.Lock()
	if c.cmdExecs[h.id] == h {
		delete(c.cmdExecs, h.id)
	}
	c.mu.Unlock()
}

// routedDelta is the decoded value of a command/exec/outputDelta that
// predecode has already handed to its handle; the handler ignores it.
type routedDelta struct{}

var deltaMethod = []byte(`"` + wire.MethodCommandExecOutput + `"`)

// predecode is the Client's rpc.Options.Predecode: the process
// notifications' fast decoding, and the routing of command/exec/outputDelta.
// The deltas are routed here, on the reading goroutine, so that each one
// is queued to its handle before the command's answer, which the same
// goroutine reads later, can reach Wait.
func (c *Client) predecode(data []byte) (string, any) {
	if method, v := predecode(data); v != nil {
		return method, v
	}
	if !bytes.Contains(data, deltaMethod) {
		return "", nil
	}
	var msg struct {
		ID     json.RawMessage              `json:"id"`
		Method string                       `json:"method"`
		Params *wire.CommandExecOutputDelta `json:"params"`
	}
	if json.Unmarshal(data, &msg) != nil || msg.Method != wire.MethodCommandExecOutput || msg.ID != nil || msg.Params == nil {
		return "", nil
	}
	b, err := base64.StdEncoding.DecodeString(msg.Params.DeltaBase64)
	if err != nil {
		c.log.Debug("bad command/exec/outputDelta", "processId", msg.Params.ProcessID, "error", err)
		return wire.MethodCommandExecOutput, routedDelta{}
	}
	c.routeCommandExec(msg.Params.ProcessID, CommandExecOutput{Stream: msg.Params.Stream, Data: b, CapReached: msg.Params.CapReached})
	return wire.MethodCommandExecOutput, routedDelta{}
}
