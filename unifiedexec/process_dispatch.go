package unifiedexec

import (
	"io"
	"sync"
)

// dispatcher runs the callbacks of one process (OnOutput, OnEvent and the
// Stdout/Stderr writers) on its own goroutine, in seq order, so that a slow
// or blocked callback delays only its own process: the client's event
// goroutine only appends to an unbounded queue. The goroutine is owned by
// the Process; it ends after the final batch, or at stop once the running
// callback returns.
type dispatcher struct {
	mu      sync.Mutex
	queue   []batch // guarded by mu
	stopped bool    // guarded by mu
	wake    chan struct{}
}

// batch is what one deliver call publishes.
type batch struct {
	chunks []Chunk
	events []Event
	final  bool // the closed event: close Done after the callbacks
}

// startDispatcher starts the goroutine when the process has callbacks
// (from newProcess, before p can receive events).
func (p *Process) startDispatcher() {
	if p.onOutput == nil && p.onEvent == nil {
		return
	}
	p.disp = &dispatcher{wake: make(chan struct{}, 1)}
	go p.runDispatcher()
}

// dispatch hands a batch to the dispatcher, or, without one, closes Done at
// the final batch.
func (p *Process) dispatch(b batch) {
	d := p.disp
	if d == nil {
		if b.final {
			p.finish()
		}
		return
	}
	d.mu.Lock()
	if !d.stopped {
		d.queue = append(d.queue, b)
	}
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

func (p *Process) runDispatcher() {
	d := p.disp
	for {
		d.mu.Lock()
		q, stopped := d.queue, d.stopped
		d.queue = nil
		d.mu.Unlock()
		if stopped {
			return
		}
		for _, b := range q {
			for _, ch := range b.chunks {
				p.onOutput(ch)
				if p.recycle {
					putChunk(ch.Data)
				}
			}
			for _, ev := range b.events {
				p.onEvent(ev)
			}
			if b.final {
				p.finish()
				return
			}
		}
		<-d.wake
	}
}

// stopDispatcher drops what is queued; the goroutine ends once the running
// callback returns.
func (p *Process) stopDispatcher() {
	if d := p.disp; d != nil {
		d.mu.Lock()
		d.stopped, d.queue = true, nil
		d.mu.Unlock()
		select {
		case d.wake <- struct{}{}:
		default:
		}
	}
}

// finish closes Done once.
func (p *Process) finish() { p.doneOnce.Do(func() { close(p.done) }) }

// outputSink combines StartOptions.OnOutput with the Stdout and Stderr
// writers into one callback, or nil when none is set. After a writer
// fails it gets no more data, and Wait reports its error.
func (p *Process) outputSink(o StartOptions) func(Chunk) {
	if o.Stdout == nil && o.Stderr == nil {
		return o.OnOutput
	}
	var failed [2]bool
	return func(ch Chunk) {
		if o.OnOutput != nil {
			o.OnOutput(ch)
		}
		i, w := 0, o.Stdout
		if ch.Stream == "stderr" {
			i, w = 1, o.Stderr
		}
		if w == nil || failed[i] {
			return
		}
		if _, err := w.Write(ch.Data); err != nil {
			failed[i] = true
			p.mu.Lock()
			if p.copyErr == nil {
				p.copyErr = err
			}
			p.mu.Unlock()
		}
	}
}

// StdinPipe returns a writer to the process's stdin (process/write) whose
// Close closes stdin. The process must have been started with PipeStdin or
// TTY. Each Write blocks until the server accepted the data, or until the
// Client is closed; it affects no other process.
func (p *Process) StdinPipe() io.WriteCloser { return stdinPipe{p} }

type stdinPipe struct{ p *Process }

func (s stdinPipe) Write(b []byte) (int, error) {
	if err := s.p.Write(s.p.c.ctx, b); err != nil {
		return 0, err
	}
	return len(b), nil
}

func (s stdinPipe) Close() error { return s.p.CloseStdin(s.p.c.ctx) }
