package agenttool_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/codexec/codex/unifiedexec/agenttool"
	"github.com/codexec/codex/wire"
)

// fakeBackend is a deterministic Backend: each Start creates a fakeHandle
// and runs the optional script on it before returning.
type fakeBackend struct {
	mu       sync.Mutex
	starts   []agenttool.StartRequest
	handles  []*fakeHandle
	startErr error
	script   func(h *fakeHandle)
}

func (b *fakeBackend) Start(_ context.Context, req agenttool.StartRequest) (agenttool.ProcessHandle, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.startErr != nil {
		return nil, b.startErr
	}
	h := &fakeHandle{id: req.ProcessID, ch: make(chan agenttool.BackendEvent, 4096), writeStatus: wire.WriteAccepted}
	b.starts = append(b.starts, req)
	b.handles = append(b.handles, h)
	if b.script != nil {
		b.script(h)
	}
	return h, nil
}

func (b *fakeBackend) handle(i int) *fakeHandle {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.handles[i]
}

type fakeHandle struct {
	id          string
	mu          sync.Mutex
	ch          chan agenttool.BackendEvent
	done        bool
	closes      int
	terminates  int
	writes      []string
	writeIDs    []string
	writeStatus string
	writeErr    error
	onWrite     func(h *fakeHandle, chunk string)
}

func (h *fakeHandle) ID() string                            { return h.id }
func (h *fakeHandle) Events() <-chan agenttool.BackendEvent { return h.ch }
func (h *fakeHandle) Terminate(context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.terminates++
	return nil
}

func (h *fakeHandle) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closes++
	if !h.done {
		h.done = true
		close(h.ch)
	}
}

func (h *fakeHandle) Write(_ context.Context, chunk []byte, writeID string) (string, error) {
	h.mu.Lock()
	h.writes = append(h.writes, string(chunk))
	h.writeIDs = append(h.writeIDs, writeID)
	status, err, on := h.writeStatus, h.writeErr, h.onWrite
	h.mu.Unlock()
	if on != nil && err == nil && status == wire.WriteAccepted {
		on(h, string(chunk))
	}
	return status, err
}

func (h *fakeHandle) send(ev agenttool.BackendEvent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done {
		return
	}
	h.ch <- ev
	if ev.Kind == agenttool.BackendClosed || ev.Kind == agenttool.BackendFailed {
		h.done = true
		close(h.ch)
	}
}

func (h *fakeHandle) output(s string) {
	h.send(agenttool.BackendEvent{Kind: agenttool.BackendOutput, Stream: "stdout", Data: []byte(s)})
}

func (h *fakeHandle) exit(code int) {
	h.send(agenttool.BackendEvent{Kind: agenttool.BackendExited, ExitCode: code})
}

func (h *fakeHandle) closeOut() { h.send(agenttool.BackendEvent{Kind: agenttool.BackendClosed}) }

// recorder collects events.
type recorder struct {
	mu     sync.Mutex
	events []agenttool.Event
}

func (r *recorder) sink(e agenttool.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) all() []agenttool.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]agenttool.Event(nil), r.events...)
}

func (r *recorder) ofType(typ string) []agenttool.Event {
	var out []agenttool.Event
	for _, e := range r.all() {
		if e.EventType() == typ {
			out = append(out, e)
		}
	}
	return out
}

// env is one test's world: a fake backend and a fake clock inside a
// synctest bubble, so "everything is blocked" is observable.
type env struct {
	t     *testing.T
	b     *fakeBackend
	clk   *agenttool.FakeClock
	rec   *recorder
	tools *agenttool.Tools
}

func newEnv(t *testing.T, script func(h *fakeHandle)) *env {
	e := &env{t: t, b: &fakeBackend{script: script}, clk: agenttool.NewFakeClock(time.Unix(1_700_000_000, 0)), rec: &recorder{}}
	e.tools = agenttool.New(agenttool.Config{
		Backend: e.b, Clock: e.clk, Sink: e.rec.sink, DeterministicIDs: true, Shell: "/bin/bash",
	})
	t.Cleanup(e.tools.Close)
	return e
}

// inBubble runs f in a synctest bubble.
func inBubble(t *testing.T, f func(t *testing.T)) { synctest.Test(t, f) }

// result is an asynchronous tool call.
type result struct {
	out *agenttool.ExecCommandOutput
	err error
}

func (e *env) goExec(p agenttool.ExecCommandParams) <-chan result {
	ch := make(chan result, 1)
	go func() {
		out, err := e.tools.ExecCommand(context.Background(), agenttool.ExecCommandCall{
			CallID: "call-1", TurnID: "turn-1", Cwd: "/work", Params: p,
		})
		ch <- result{out, err}
	}()
	return ch
}

func (e *env) goWrite(p agenttool.WriteStdinParams) <-chan result {
	ch := make(chan result, 1)
	go func() {
		out, err := e.tools.WriteStdin(context.Background(), agenttool.WriteStdinCall{Params: p})
		ch <- result{out, err}
	}()
	return ch
}

// advance moves the fake clock by d once every goroutine is blocked, and
// waits for the consequences.
func (e *env) advance(d time.Duration) {
	synctest.Wait()
	e.clk.Advance(d)
	synctest.Wait()
}

// settle runs the fake clock forward, timer by timer, until ch yields.
func (e *env) settle(ch <-chan result) result {
	e.t.Helper()
	for range 1000 {
		synctest.Wait()
		select {
		case r := <-ch:
			return r
		default:
		}
		next, ok := e.clk.NextDeadline()
		if !ok {
			e.t.Fatal("call blocked with no pending timer")
		}
		e.clk.Advance(next.Sub(e.clk.Now()))
	}
	e.t.Fatal("call did not finish")
	return result{}
}

func (e *env) elapsedSince(start time.Time) time.Duration { return e.clk.Now().Sub(start) }

// waitIdle waits until every other goroutine of the bubble is blocked.
func waitIdle() { synctest.Wait() }
