package agenttool

import (
	"context"
	"errors"
	"sync"

	"github.com/codexec/codex/unifiedexec"
)

// ClientBackend runs the tools (Tools) on an exec-server through a Client.
// It is safe for concurrent use.
type ClientBackend struct {
	Client *unifiedexec.Client
}

var _ Backend = ClientBackend{}

// Start starts the process and returns once process/start was answered.
// Every event from then on is queued for the handle's Events channel, so
// nothing is lost before the tools start reading.
func (b ClientBackend) Start(ctx context.Context, req StartRequest) (ProcessHandle, error) {
	h := &clientHandle{c: b.Client, events: make(chan BackendEvent), stop: make(chan struct{}), pumped: make(chan struct{})}
	h.cond = sync.NewCond(&h.mu)
	opts := unifiedexec.StartOptions{
		ProcessID: req.ProcessID, Argv: req.Argv, Cwd: req.Cwd, Env: req.Env, EnvPolicy: req.EnvPolicy,
		TTY: req.TTY, Sandbox: req.Sandbox, OutputBytesCap: unifiedexec.NoOutputBytesCap, OnEvent: h.onEvent,
	}
	p, err := b.Client.Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	h.p = p
	go h.watch()
	go h.pump()
	return h, nil
}

// clientHandle adapts a Process to ProcessHandle: events go into an
// unbounded queue (the tools must never make the client's event goroutine
// wait) that one pump goroutine feeds into the Events channel.
type clientHandle struct {
	c      *unifiedexec.Client
	p      *unifiedexec.Process
	events chan BackendEvent
	stop   chan struct{} // closed by Close
	pumped chan struct{} // closed when the pump returned
	once   sync.Once

	mu    sync.Mutex
	cond  *sync.Cond
	queue []BackendEvent // guarded by mu
	ended bool           // guarded by mu: no event will follow the queue
}

func (h *clientHandle) ID() string { return h.p.ID() }

func (h *clientHandle) Events() <-chan BackendEvent { return h.events }

func (h *clientHandle) push(ev BackendEvent, last bool) {
	h.mu.Lock()
	if !h.ended {
		h.queue = append(h.queue, ev)
		h.ended = last
	}
	h.mu.Unlock()
	h.cond.Broadcast()
}

func (h *clientHandle) onEvent(ev unifiedexec.Event) {
	switch ev.Kind {
	case unifiedexec.EventOutput:
		h.push(BackendEvent{Kind: BackendOutput, Seq: ev.Seq, Stream: ev.Stream, Data: ev.Data}, false)
	case unifiedexec.EventExited:
		h.push(BackendEvent{Kind: BackendExited, Seq: ev.Seq, ExitCode: ev.ExitCode, SandboxDenied: ev.SandboxDenied}, false)
	case unifiedexec.EventClosed:
		h.push(BackendEvent{Kind: BackendClosed, Seq: ev.Seq}, true)
	}
}

// watch turns a failed process (lost transport, closed client) into a
// BackendFailed event. It returns when the process is done.
func (h *clientHandle) watch() {
	select {
	case <-h.p.Done():
	case <-h.stop:
		return
	}
	if _, err := h.p.Wait(context.Background()); err != nil {
		h.push(BackendEvent{Kind: BackendFailed, Message: err.Error()}, true)
	}
}

// pump feeds the queue into Events until the last event or Close.
func (h *clientHandle) pump() {
	defer close(h.pumped)
	defer close(h.events)
	for {
		h.mu.Lock()
		for len(h.queue) == 0 && !h.ended && !h.stopped() {
			h.cond.Wait()
		}
		if h.stopped() || len(h.queue) == 0 {
			h.mu.Unlock()
			return
		}
		ev := h.queue[0]
		h.queue = h.queue[1:]
		h.mu.Unlock()
		select {
		case h.events <- ev:
		case <-h.stop:
			return
		}
	}
}

func (h *clientHandle) stopped() bool {
	select {
	case <-h.stop:
		return true
	default:
		return false
	}
}

func (h *clientHandle) Write(ctx context.Context, chunk []byte, writeID string) (string, error) {
	return h.c.Write(ctx, unifiedexec.WriteRequest{ProcessID: h.p.ID(), Data: chunk, WriteID: writeID})
}

func (h *clientHandle) Terminate(ctx context.Context) error {
	_, err := h.c.Terminate(ctx, h.p.ID(), 0)
	if errors.Is(err, unifiedexec.ErrClosed) {
		return nil
	}
	return err
}

// Close stops the Events channel without waiting for the tools to read it;
// the process keeps running.
func (h *clientHandle) Close() {
	h.once.Do(func() {
		h.mu.Lock() // no lost wake-up between the pump's check and its Wait
		close(h.stop)
		h.cond.Broadcast()
		h.mu.Unlock()
		<-h.pumped
	})
}
