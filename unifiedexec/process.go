package unifiedexec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wire"
)

// DefaultOutputBytesCap is the default per-stream capture cap of a Process
// (StartOptions.OutputBytesCap): 1 MiB.
const DefaultOutputBytesCap = 1 << 20

// EventKind is the kind of a process event.
type EventKind int

// Event kinds, in the order a normal run publishes them.
const (
	EventOutput EventKind = iota + 1
	EventExited
	EventClosed
)

// Event is one process notification (docs/protocol.md §6.10). Output events
// carry Stream ("stdout", "stderr" or "pty") and Data; exited events carry
// ExitCode and SandboxDenied.
type Event struct {
	Seq           uint64
	Kind          EventKind
	Stream        string
	Data          []byte
	ExitCode      int
	SandboxDenied bool
}

// Chunk is one piece of output, delivered to StartOptions.OnOutput.
type Chunk struct {
	Seq    uint64
	Stream string // "stdout", "stderr" or "pty"
	Data   []byte
}

// ExitStatus is how a process ended. Code is the exit code, 128+N for a
// death by signal N, or -1 when unknown.
type ExitStatus struct {
	Code          int
	SandboxDenied bool
}

// Success reports whether the process exited with code 0.
func (s ExitStatus) Success() bool { return s.Code == 0 }

// StartOptions describe a process to start. Argv is required; every other
// field has a usable zero value.
type StartOptions struct {
	// Argv is the command; Argv[0] is resolved with the child's PATH.
	Argv []string
	// Cwd is a file:// URI or an absolute path; empty means the server's cwd.
	Cwd string
	// Env is laid over the child's base environment (docs/client.md §3.6):
	// by default the server's, as for CommandExec and Run; never the
	// caller's unless InheritEnv is set.
	Env map[string]string
	// EnvPolicy, when set, chooses what the child inherits from the
	// server's environment (docs/protocol.md §7.3) instead of the default
	// (ServerEnv: all of it); &wire.EnvPolicy{Inherit: "none"} gives
	// exactly Env.
	EnvPolicy *wire.EnvPolicy
	// InheritEnv sends the caller's whole environment (os.Environ of this
	// program), with Env laid over it, as the child's environment instead
	// of the server's. It sends every variable, credentials included, to
	// the server; it excludes EnvPolicy.
	InheritEnv bool
	// TTY runs the process on a PTY; Size is its initial size (nil: 24x80).
	TTY  bool
	Size *wire.Size
	// PipeStdin keeps stdin writable in pipe mode (otherwise /dev/null).
	PipeStdin bool
	// Sandbox is the wire sandbox object (docs/protocol.md §8.1); nil means none.
	Sandbox []byte
	// ProcessID is the wire id; empty means a fresh "<n>-<uuid>".
	ProcessID string
	// OutputBytesCap caps the bytes of each stream kept for Snapshot and
	// Communicate (the first N are kept). 0 means DefaultOutputBytesCap;
	// negative (NoOutputBytesCap) means no cap. It does not limit OnOutput.
	OutputBytesCap int
	// OnOutput, when set, receives every output chunk in seq order, before
	// Wait returns. It runs on a goroutine of this process: a slow or
	// blocked callback delays only this process's callbacks (events queue
	// in memory meanwhile), never the client's other calls or processes,
	// and Close does not wait for it.
	OnOutput func(Chunk)
	// OnEvent, when set, receives every event (output, exited, closed) in
	// seq order, under the same rules as OnOutput.
	OnEvent func(Event)
	// Stdout and Stderr, when set, receive the output of that stream (a
	// PTY's output goes to Stdout), like os/exec.Cmd's fields, under the
	// rules of OnOutput. After a write error a writer gets no more data and
	// Wait returns that error if nothing else failed. Use io.Pipe for an
	// io.Reader. As io.Writer requires, a writer must not keep the slice
	// it is given: without OnOutput and OnEvent, its memory is reused for
	// later output.
	Stdout, Stderr io.Writer
}

// Process is a handle on one process started with Client.Start, in the
// style of os/exec.Cmd: it stands for a single run and is safe for
// concurrent use. Output is available as a stream (StartOptions.OnOutput)
// and as a capped capture (Snapshot, Communicate).
type Process struct {
	c         *Client
	id        string
	tty, pipe bool
	cap       int
	onOutput  func(Chunk)
	onEvent   func(Event)
	recycle   bool          // no callback sees output: chunks go back to the pool once written
	exitedCh  chan struct{} // closed at the exited event
	done      chan struct{} // closed after the closed event or a failure

	dmu      sync.Mutex  // serialises publishing
	disp     *dispatcher // runs the callbacks; nil when there are none
	doneOnce sync.Once   // closes done

	mu          sync.Mutex
	last        uint64           // guarded by mu: last published seq
	parked      map[uint64]Event // guarded by mu: events above last+1
	out         [2][]byte        // guarded by mu: stdout (or pty), stderr
	dropped     [2]int64         // guarded by mu: bytes beyond cap
	exited      bool             // guarded by mu
	status      ExitStatus       // guarded by mu
	closed      bool             // guarded by mu
	err         error            // guarded by mu: the failure, if any
	copyErr     error            // guarded by mu: the first Stdout/Stderr write error
	sandboxType string           // guarded by mu
}

// newProcess builds the handle of a process with its dispatcher; a caller
// that drops it unpublished stops the dispatcher (failWith or
// stopDispatcher).
func newProcess(c *Client, id string, o StartOptions) *Process {
	limit := o.OutputBytesCap
	if limit == 0 {
		limit = DefaultOutputBytesCap
	}
	p := &Process{
		c: c, id: id, tty: o.TTY, pipe: o.PipeStdin, cap: limit, onEvent: o.OnEvent,
		done: make(chan struct{}), exitedCh: make(chan struct{}), parked: map[uint64]Event{}, status: ExitStatus{Code: -1},
	}
	p.onOutput = p.outputSink(o)
	p.recycle = o.OnOutput == nil && o.OnEvent == nil
	p.startDispatcher()
	return p
}

// ID returns the wire processId.
func (p *Process) ID() string { return p.id }

// SandboxType returns the sandboxType reported by process/start.
func (p *Process) SandboxType() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sandboxType
}

// Done returns a channel closed when the process is finished: its closed
// event was published, or it failed.
func (p *Process) Done() <-chan struct{} { return p.done }

// lastSeq returns the last published seq.
func (p *Process) lastSeq() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

// deliver parks evs and publishes every event that is next in seq order
// (docs/client.md §3.2). Events at or below the last published seq, and
// everything after closed, are dropped.
func (p *Process) deliver(evs []Event) {
	p.dmu.Lock()
	defer p.dmu.Unlock()
	p.mu.Lock()
	if p.closed || p.err != nil {
		p.mu.Unlock()
		return
	}
	for _, ev := range evs {
		if ev.Seq > p.last {
			if _, dup := p.parked[ev.Seq]; !dup {
				p.parked[ev.Seq] = ev
			}
		}
	}
	var ready []Chunk
	var published []Event
	finished := false
	for !finished {
		ev, ok := p.parked[p.last+1]
		if !ok {
			break
		}
		delete(p.parked, ev.Seq)
		p.last = ev.Seq
		if p.onEvent != nil {
			published = append(published, ev)
		}
		switch ev.Kind {
		case EventOutput:
			p.capture(ev)
			if p.onOutput != nil {
				ready = append(ready, Chunk{Seq: ev.Seq, Stream: ev.Stream, Data: ev.Data})
			} else if p.recycle {
				putChunk(ev.Data)
			}
		case EventExited:
			if !p.exited {
				close(p.exitedCh)
			}
			p.exited = true
			p.status = ExitStatus{Code: ev.ExitCode, SandboxDenied: ev.SandboxDenied}
		case EventClosed:
			p.closed, finished = true, true
			p.parked = nil
		}
	}
	p.mu.Unlock()
	if finished {
		p.c.unregister(p)
	}
	p.dispatch(batch{chunks: ready, events: published, final: finished})
}

// capture appends output to the capped capture. p.mu must be held.
func (p *Process) capture(ev Event) {
	i := 0
	if ev.Stream == "stderr" {
		i = 1
	}
	data := ev.Data
	if p.cap >= 0 {
		room := max(p.cap-len(p.out[i]), 0)
		if len(data) > room {
			p.dropped[i] += int64(len(data) - room)
			data = data[:room]
		}
	}
	p.out[i] = append(p.out[i], data...)
}

// failWith ends the process with err unless it already finished.
func (p *Process) failWith(err error) {
	p.dmu.Lock()
	defer p.dmu.Unlock()
	p.mu.Lock()
	if p.closed || p.err != nil {
		p.mu.Unlock()
		return
	}
	p.err = err
	p.parked = nil
	p.mu.Unlock()
	p.c.unregister(p)
	p.stopDispatcher()
	p.finish()
}

// Wait blocks until the process is closed (exited and its output drained)
// and returns its exit status. If the process failed (a lost transport, a
// closed client) it returns the error, which wraps ErrTransport or
// ErrClosed. Cancelling ctx abandons the wait and returns ctx.Err(); it
// never kills the process. Wait may be called any number of times.
func (p *Process) Wait(ctx context.Context) (ExitStatus, error) {
	select {
	case <-p.done:
	case <-ctx.Done():
		return ExitStatus{Code: -1}, ctx.Err()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil && p.copyErr != nil {
		return p.status, p.copyErr
	}
	return p.status, p.err
}

// Snapshot is the state of a process and its captured output so far.
type Snapshot struct {
	// Stdout holds stdout (or the PTY stream), Stderr stderr: the first
	// OutputBytesCap bytes of each.
	Stdout, Stderr []byte
	// StdoutDropped and StderrDropped count bytes beyond the cap.
	StdoutDropped, StderrDropped int64
	Exited, Closed               bool
	Status                       ExitStatus
	Err                          error
	LastSeq                      uint64
}

// WaitExit is Wait, but returns at process/exited: output from descendants
// that still hold the pipes may follow. Cancelling ctx abandons the wait and
// never kills the process.
func (p *Process) WaitExit(ctx context.Context) (ExitStatus, error) {
	select {
	case <-p.exitedCh:
	case <-p.done:
	case <-ctx.Done():
		return ExitStatus{Code: -1}, ctx.Err()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.status, p.err
}

// Snapshot is the yield-window collection of docs/client.md §3.5 and §5.4:
// it waits until the process exits (then up to 50 ms more for trailing
// output), yield has passed or ctx is done, and then returns the output
// gathered so far with the state. It never kills
// the process; ctx's error is returned only if ctx ended the wait.
func (p *Process) Snapshot(ctx context.Context, yield time.Duration) (Snapshot, error) {
	deadline := time.Now().Add(yield)
	t := time.NewTimer(yield)
	defer t.Stop()
	select {
	case <-p.exitedCh:
		// Trailing output may still be in flight after the exit: wait for
		// the close, but at most 50 ms and never past the deadline (docs/client.md §5.4).
		grace := time.NewTimer(min(50*time.Millisecond, max(time.Until(deadline), 0)))
		defer grace.Stop()
		select {
		case <-p.done:
		case <-grace.C:
		case <-ctx.Done():
			return p.Current(), ctx.Err()
		}
	case <-p.done:
	case <-t.C:
	case <-ctx.Done():
		return p.Current(), ctx.Err()
	}
	return p.Current(), nil
}

// Current returns a copy of the output captured so far and the current
// state. It never blocks on the server.
func (p *Process) Current() Snapshot {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Snapshot{
		Stdout: append([]byte(nil), p.out[0]...), Stderr: append([]byte(nil), p.out[1]...),
		StdoutDropped: p.dropped[0], StderrDropped: p.dropped[1],
		Exited: p.exited, Closed: p.closed, Status: p.status, Err: p.err, LastSeq: p.last,
	}
}

// Write sends data to the process's stdin (or PTY). It returns once the
// server has queued the bytes. Each call carries a fresh writeId, so it is
// retried once, safely, when the connection is recovered during the call.
// A process without writable stdin gives ErrStdinClosed.
func (p *Process) Write(ctx context.Context, data []byte) error {
	return p.write(ctx, data, false)
}

func (p *Process) write(ctx context.Context, data []byte, closeStdin bool) error {
	id := strconv.FormatUint(p.c.wrIDs.Add(1), 10)
	status, err := p.c.Write(ctx, WriteRequest{ProcessID: p.id, Data: data, WriteID: id, CloseStdin: closeStdin})
	if err != nil {
		return err
	}
	return statusError(p.id, status)
}

func statusError(id, status string) error {
	switch status {
	case wire.WriteAccepted:
		return nil
	case wire.WriteUnknownProcess:
		return fmt.Errorf("%w %s", ErrUnknownProcess, id)
	case wire.WriteStdinClosed:
		return ErrStdinClosed
	}
	return fmt.Errorf("process %s: write status %q", id, status)
}

// CloseStdin closes the process's stdin after every earlier write has been
// delivered (process/closeStdin, docs/protocol.md §10.2). For a PTY it writes
// the terminal's EOF character (Ctrl-D) instead. Against a server without
// the extension (-32601) it fails with the wire error.
func (p *Process) CloseStdin(ctx context.Context) error {
	if p.tty {
		return p.Write(ctx, []byte{4})
	}
	status, err := p.c.CloseStdin(ctx, p.id)
	if err != nil {
		return err
	}
	return statusError(p.id, status)
}

// Resize sets the PTY size (process/resize). It blocks until the server
// answers.
func (p *Process) Resize(ctx context.Context, size wire.Size) error {
	return p.c.Resize(ctx, p.id, size)
}

// Signal sends sig (SignalInterrupt: SIGINT to the process group). It blocks
// until the server answers; it is not retried after a connection loss.
func (p *Process) Signal(ctx context.Context, sig Signal) error { return p.c.Signal(ctx, p.id, sig) }

// Terminate kills the process group: at once when graceful is 0,
// otherwise SIGTERM and SIGKILL after graceful. It returns whether the
// process was running, without waiting for the exit (use Wait).
func (p *Process) Terminate(ctx context.Context, graceful time.Duration) (bool, error) {
	return p.c.Terminate(ctx, p.id, graceful)
}

// Communicate writes stdin (if not empty), closes stdin, waits for the
// process to close and returns the captured stdout and stderr (each capped
// by OutputBytesCap) with the exit status. When the capture dropped
// output, the kept prefix and the status come with a *TruncatedError
// (errors.Is(err, ErrOutputTruncated)). A process started without
// PipeStdin or TTY accepts only empty stdin. Cancelling ctx abandons the
// call without killing the process.
func (p *Process) Communicate(ctx context.Context, stdin []byte) (stdout, stderr []byte, status ExitStatus, err error) {
	if p.pipe || p.tty {
		if len(stdin) > 0 {
			if err := p.Write(ctx, stdin); err != nil {
				return nil, nil, ExitStatus{Code: -1}, err
			}
		}
		if err := p.CloseStdin(ctx); err != nil && !errors.Is(err, ErrUnknownProcess) {
			// The process may have exited and been forgotten; that is fine.
			var we *rpc.Error
			if !errors.As(err, &we) {
				return nil, nil, ExitStatus{Code: -1}, err
			}
		}
	} else if len(stdin) > 0 {
		return nil, nil, ExitStatus{Code: -1}, ErrStdinClosed
	}
	status, err = p.Wait(ctx)
	s := p.Current()
	if err == nil && (s.StdoutDropped > 0 || s.StderrDropped > 0) {
		err = &TruncatedError{StdoutDropped: s.StdoutDropped, StderrDropped: s.StderrDropped}
	}
	return s.Stdout, s.Stderr, status, err
}
