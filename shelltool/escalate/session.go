package escalate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// Serve answers the exec requests of one command: it reads datagrams from
// sock, the server's end of the command's escalate socketpair (see
// NewSocketPair), and serves each stream socket received (one byte, one
// descriptor) in a goroutine of its own (docs/shell-tool.md §6.3): the request is
// judged by d, Run and Deny are answered, Escalate runs the program with
// esc on the descriptors the wrapper sends and answers its exit code.
// A datagram without exactly one descriptor is logged and dropped. A
// session whose wrapper goes away (its end of the stream closes) has its
// pending decision cancelled and its escalated program killed.
//
// Serve returns when ctx is done, or when reading sock fails (sock
// closed by the caller, or an I/O error, which is returned), after every
// session it started has finished; sessions see ctx, so cancelling it
// ends pending decisions (d must then return) and kills escalated
// programs. A datagram peer that closes is not an end: background
// processes of the command may still hold the socket, so the caller
// cancels ctx when the command is over. Serve does not close sock.
func Serve(ctx context.Context, sock *os.File, d Decider, esc *Escalator, log *zap.Logger) error {
	if log == nil {
		log = zap.NewNop()
	}
	f, c, err := serverConn(sock)
	if err != nil {
		return err
	}
	if f != sock {
		defer f.Close()
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	stop := context.AfterFunc(ctx, func() { _ = f.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	for {
		data, fds, err := recvDatagram(c)
		switch {
		case err != nil && (isClosed(err) || ctx.Err() != nil):
			return nil
		case errors.Is(err, ErrInvalidInput):
			log.Warn("escalate: dropping datagram", zap.Error(err))
			continue
		case err != nil:
			return err
		case len(fds) != 1:
			log.Warn("escalate: dropping datagram without exactly one descriptor",
				zap.Int("bytes", len(data)), zap.Int("fds", len(fds)))
			closeFDs(fds)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				// A panicking Decider closes its session (the wrapper
				// fails: exit 1), never the server.
				if p := recover(); p != nil {
					log.Error("escalate: session panicked", zap.Any("panic", p), zap.Stack("stack"))
				}
			}()
			if err := serveSession(ctx, fds[0], d, esc, log); err != nil && ctx.Err() == nil {
				log.Warn("escalate: session failed", zap.Error(err))
			}
		}()
	}
}

// serverConn returns a pollable file for sock (sock itself when it is
// pollable, else a non-blocking duplicate the caller must close) and its
// msgConn.
func serverConn(sock *os.File) (*os.File, pollConn, error) {
	if sock.SetReadDeadline(time.Time{}) == nil {
		rc, err := sock.SyscallConn()
		return sock, pollConn{rc}, err
	}
	rc, err := sock.SyscallConn()
	if err != nil {
		return nil, pollConn{}, err
	}
	dup, derr := -1, error(nil)
	if err := rc.Control(func(fd uintptr) {
		dup, derr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return nil, pollConn{}, err
	}
	if derr != nil {
		return nil, pollConn{}, os.NewSyscallError("fcntl", derr)
	}
	return newPollFile(dup, sock.Name())
}

// serveSession runs the session handler of docs/shell-tool.md §6.3 on the stream socket
// fd, which it owns and closes.
func serveSession(ctx context.Context, fd int, d Decider, esc *Escalator, log *zap.Logger) error {
	peer := -1
	if cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil && cred.Pid > 0 {
		peer = int(cred.Pid)
	}
	f, c, err := newPollFile(fd, "escalate-session")
	if err != nil {
		return err
	}
	defer f.Close()
	stop := context.AfterFunc(ctx, func() { _ = f.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	var w wireRequest
	if err := readMessage(c, &w); err != nil {
		return fmt.Errorf("receiving EscalateRequest: %w", err)
	}
	r, err := w.request()
	r.Peer = peer
	var dec Decision
	if err != nil {
		reason := "invalid exec request: " + err.Error()
		dec = Decision{Action: Deny, Reason: &reason}
	} else {
		whileConnected(ctx, f, c, func(ctx context.Context) { dec = d.Decide(ctx, r) })
	}
	defer dec.Close()
	if dec.Action == Escalate && dec.Program == nil {
		reason := errNoProgram.Error()
		dec = Decision{Action: Deny, Reason: &reason} // fail closed
	}
	log.Debug("escalate: decision", zap.String("file", r.File), zap.Strings("argv", r.Argv),
		zap.Int("action", int(dec.Action)))
	if err := writeMessage(c, wireResponse{dec}, nil); err != nil {
		return fmt.Errorf("sending EscalateResponse: %w", err)
	}
	if dec.Action != Escalate {
		return nil
	}
	return superExec(ctx, f, c, r, dec.Program, esc)
}

// superExec is the Escalate half of a session: receive the descriptors,
// run the program, answer its exit code.
func superExec(ctx context.Context, f *os.File, c pollConn, r Request, prog *Program, esc *Escalator) error {
	payload, fds, err := readFrame(c)
	if err != nil {
		return fmt.Errorf("receiving SuperExecMessage: %w", err)
	}
	var m superExecMessage
	if err := json.Unmarshal(payload, &m); err != nil {
		closeFDs(fds)
		return fmt.Errorf("decoding SuperExecMessage: %w", err)
	}
	stdio, err := targets(m, fds)
	if err != nil {
		return err
	}
	var code int
	whileConnected(ctx, f, c, func(ctx context.Context) { code, err = esc.run(ctx, r, prog, stdio) })
	if err != nil {
		// Tell the command why, on its own stderr, as a failed exec in
		// the wrapper would; exit code 1 likewise.
		if len(stdio) > 2 && stdio[2] >= 0 {
			_, _ = unix.Write(stdio[2], []byte("Error: "+err.Error()+"\n"))
		}
		code = 1
	}
	closeFDs(stdio)
	if err := writeMessage(c, superExecResult{ExitCode: int64(code)}, nil); err != nil {
		return fmt.Errorf("sending SuperExecResult: %w", err)
	}
	return nil
}

// whileConnected calls fn with a context that also ends when the peer
// closes the session: the wrapper died, so its command is gone and a
// pending decision or a running escalated program has nobody to answer.
// The peer sends nothing while it waits; if it does, watching stops.
// f's read deadline is used to stop watching, then restored (to the past
// when ctx is done, as the session's cancellation would have set it).
func whileConnected(ctx context.Context, f *os.File, c pollConn, fn func(context.Context)) {
	inner, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if c.peerClosed() {
			cancel()
		}
	}()
	fn(inner)
	_ = f.SetReadDeadline(time.Unix(1, 0))
	<-done
	_ = f.SetReadDeadline(time.Time{})
	if ctx.Err() != nil {
		_ = f.SetDeadline(time.Unix(1, 0))
	}
}

// readMessage receives one frame and decodes it into v; descriptors sent
// with it are not expected and are closed.
func readMessage(c msgConn, v any) error {
	payload, fds, err := readFrame(c)
	closeFDs(fds)
	if err != nil {
		return err
	}
	return json.Unmarshal(payload, v)
}

// writeMessage encodes v and sends it as one frame with fds attached.
func writeMessage(c msgConn, v any, fds []int) error {
	payload, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeFrame(c, payload, fds)
}
