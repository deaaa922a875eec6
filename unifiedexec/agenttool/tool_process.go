package agenttool

import (
	"context"
	"sync"
	"time"
)

// execProcess wraps a ProcessHandle for the tools (docs/client.md §5.1 step 4): a pump
// goroutine copies every chunk into a HeadTailBuffer that yield windows
// drain, feeds the delta streamer, and records the exit state.
type execProcess struct {
	h     ProcessHandle
	clock Clock

	mu           sync.Mutex
	buf          *HeadTailBuffer // drained by collect
	changed      chan struct{}   // closed and replaced on every change
	exited       bool
	exitCode     *int
	denied       bool
	failure      string
	outputClosed bool

	exitSignal chan struct{} // closed on exit, failure or terminate
	exitOnce   sync.Once
	gate       chan struct{} // closed when the stream may start (see openGate)
	emit       bool          // set before gate is closed
	gateOnce   sync.Once
	stop       chan struct{} // closed by terminate
	stopOnce   sync.Once
	drained    chan struct{} // closed when the streamer finished
	done       chan struct{} // closed when the pump returned

	streamer *deltaStreamer // owned by the pump until drained
}

func newExecProcess(h ProcessHandle, clock Clock, callID string, sink EventSink) *execProcess {
	return &execProcess{
		h: h, clock: clock,
		buf:        NewDefaultHeadTailBuffer(),
		changed:    make(chan struct{}),
		exitSignal: make(chan struct{}),
		gate:       make(chan struct{}),
		stop:       make(chan struct{}),
		drained:    make(chan struct{}),
		done:       make(chan struct{}),
		streamer:   newDeltaStreamer(callID, sink),
	}
}

// openGate lets the pump emit deltas (emit) or only record the transcript
// (!emit). Deltas are held back until then so that none precedes Begin.
func (p *execProcess) openGate(emit bool) {
	p.gateOnce.Do(func() {
		p.emit = emit
		close(p.gate)
	})
}

// broadcastLocked wakes every waiter of collect.
func (p *execProcess) broadcastLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

func (p *execProcess) fireExit() { p.exitOnce.Do(func() { close(p.exitSignal) }) }

// markExited records an exit (code may be nil) and fires the exit signal.
func (p *execProcess) markExited(code *int, denied bool) {
	p.mu.Lock()
	if !p.exited {
		p.exited, p.exitCode, p.denied = true, code, denied
	}
	p.broadcastLocked()
	p.mu.Unlock()
	p.fireExit()
}

func (p *execProcess) markClosed(failure string) {
	p.mu.Lock()
	p.outputClosed = true
	if failure != "" && p.failure == "" {
		p.failure = failure
	}
	p.broadcastLocked()
	p.mu.Unlock()
	p.fireExit()
}

// terminate is docs/client.md §5.1 step 6: fire-and-forget process/terminate, mark the
// output closed, fire the exit signal and stop the pump.
func (p *execProcess) terminate(ctx context.Context) {
	_ = p.h.Terminate(ctx)
	p.markClosed("")
	p.stopOnce.Do(func() { close(p.stop) })
}

// state returns the exit state.
func (p *execProcess) state() (exited bool, code *int, denied bool, failure string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exited || p.failure != "", p.exitCode, p.denied, p.failure
}

func (p *execProcess) hasExited() bool {
	select {
	case <-p.exitSignal:
		return true
	default:
		return false
	}
}

// snapshot returns the buffered bytes without draining them.
func (p *execProcess) snapshot() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.buf.Bytes()
}

// transcript returns the streamer's transcript; call it after drained.
func (p *execProcess) transcript() string {
	<-p.drained
	return LossyUTF8(p.streamer.transcript.Bytes())
}

// run is the pump. It ends when the events are over and the streamer has
// drained, or when terminate stops it.
func (p *execProcess) run() {
	defer close(p.done)
	events := p.h.Events()
	gate := p.gate
	var grace Timer
	var graceC <-chan time.Time
	streaming, wantDrain, isDrained := false, false, false
	finish := func() {
		wantDrain = true
		if isDrained || gate != nil {
			return // wait for the gate so that no delta precedes Begin
		}
		if grace != nil {
			grace.Stop()
		}
		p.streamer.pump(streaming, true)
		isDrained = true
		close(p.drained)
	}
	defer func() {
		if !isDrained {
			gate = nil
			finish()
		}
	}()
	for events != nil || !isDrained {
		select {
		case <-gate:
			gate, streaming = nil, p.emit
			p.streamer.pump(streaming, false)
			if wantDrain {
				finish()
			}
		case <-graceC:
			graceC = nil
			finish()
		case <-p.stop:
			return
		case ev, ok := <-events:
			if !ok {
				events = nil
				p.markClosed("")
				finish()
				continue
			}
			switch ev.Kind {
			case BackendOutput:
				p.mu.Lock()
				p.buf.Push(ev.Data)
				p.broadcastLocked()
				p.mu.Unlock()
				if !isDrained {
					p.streamer.add(ev.Data)
					if gate == nil {
						p.streamer.pump(streaming, false)
					}
				}
			case BackendExited:
				code := ev.ExitCode
				p.markExited(&code, ev.SandboxDenied)
				if !isDrained && grace == nil {
					grace = p.clock.NewTimer(TrailingOutputGrace)
					graceC = grace.C()
				}
			case BackendClosed, BackendFailed:
				events = nil
				p.markClosed(ev.Message)
				finish()
			}
		}
	}
}

// collect is the yield window of docs/client.md §5.4: it drains the buffer until the
// deadline, returning early once the process has exited and its output is
// closed (or 50 ms after the exit at most).
func (p *execProcess) collect(ctx context.Context, deadline time.Time) []byte {
	var out []byte
	exitSeen := false
	var postExit time.Time
	for {
		p.mu.Lock()
		chunks := p.buf.DrainChunks()
		closed, changed := p.outputClosed, p.changed
		p.mu.Unlock()
		now := p.clock.Now()
		if len(chunks) > 0 {
			for _, c := range chunks {
				out = append(out, c...)
			}
			if !now.Before(deadline) {
				return out
			}
			continue
		}
		exitSeen = exitSeen || p.hasExited()
		if (exitSeen && closed) || !now.Before(deadline) {
			return out
		}
		until := deadline
		if exitSeen {
			if postExit.IsZero() {
				postExit = now.Add(min(deadline.Sub(now), PostExitCloseWaitCap))
			}
			if !now.Before(postExit) {
				return out
			}
			until = postExit
		}
		exitC := p.exitSignal
		if exitSeen {
			exitC = nil // already seen; wait for output or the close
		}
		t := p.clock.NewTimer(until.Sub(now))
		select {
		case <-changed:
		case <-exitC:
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
			return out
		}
		t.Stop()
	}
}
