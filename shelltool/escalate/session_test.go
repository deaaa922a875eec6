package escalate

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	"golang.org/x/sys/unix"
)

// fakeDecider answers every request with dec and records the requests.
type fakeDecider struct {
	dec Decision
	mu  sync.Mutex
	got []Request
}

func (d *fakeDecider) Decide(ctx context.Context, r Request) Decision {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.got = append(d.got, r)
	dec := d.dec
	if dec.Action == Escalate {
		p, err := OpenProgram(r.File)
		if err != nil {
			reason := err.Error()
			return Decision{Action: Deny, Reason: &reason}
		}
		dec.Program = p
	}
	return dec
}

func (d *fakeDecider) requests() []Request {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Request(nil), d.got...)
}

// blockingDecider blocks until ctx is done, then denies.
type blockingDecider struct{ entered chan struct{} }

func (d blockingDecider) Decide(ctx context.Context, r Request) Decision {
	close(d.entered)
	<-ctx.Done()
	return Decision{Action: Deny}
}

// startServe runs Serve on a new socketpair and returns the child end
// and a stop func that cancels Serve and checks its result.
func startServe(t *testing.T, d Decider) (*os.File, func()) {
	t.Helper()
	server, child, err := NewSocketPair()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, server, d, NewEscalator(zaptest.NewLogger(t)), zaptest.NewLogger(t)) }()
	stop := sync.OnceFunc(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		server.Close()
		child.Close()
	})
	t.Cleanup(stop)
	return child, stop
}

// ask opens a session on the escalate socket child, sends w and returns
// the session socket and the decoded response.
func ask(t *testing.T, child *os.File, w wireRequest) (fdConn, Decision) {
	t.Helper()
	fd, err := connect(int(child.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	c := fdConn(fd)
	if err := writeMessage(c, w, nil); err != nil {
		t.Fatal(err)
	}
	var resp wireResponse
	if err := readMessage(c, &resp); err != nil {
		t.Fatal(err)
	}
	return c, resp.Decision
}

func TestSessionRunWithLargeEnv(t *testing.T) {
	d := &fakeDecider{dec: Decision{Action: Run}}
	child, stop := startServe(t, d)
	env := map[string]string{}
	for i := range 10 {
		env["VAR_"+string(rune('A'+i))] = strings.Repeat(string(rune('a'+i)), 1024)
	}
	w := wireRequest{File: "/usr/bin/true", Argv: []string{"true"}, Workdir: "/tmp", Env: env}
	if _, dec := ask(t, child, w); dec.Action != Run {
		t.Fatalf("action %v, want Run", dec.Action)
	}
	stop()
	got := d.requests()
	if len(got) != 1 || len(got[0].Env) != 10 || got[0].Env["VAR_J"] != env["VAR_J"] {
		t.Errorf("decider saw %d requests, env of %d", len(got), len(got[0].Env))
	}
}

func TestSessionEscalateEmptyFDList(t *testing.T) {
	d := &fakeDecider{dec: Decision{Action: Escalate}}
	child, stop := startServe(t, d)
	defer stop()
	dir := t.TempDir()
	w := wireRequest{File: "/bin/sh", Argv: []string{"sh", "-c", `test "$LANG" = VALUE && exit 42; exit 1`},
		Workdir: dir, Env: map[string]string{"LANG": "VALUE"}}
	c, dec := ask(t, child, w)
	if dec.Action != Escalate {
		t.Fatalf("action %v, want Escalate", dec.Action)
	}
	if err := writeMessage(c, superExecMessage{FDs: []int{}}, nil); err != nil {
		t.Fatal(err)
	}
	var res superExecResult
	if err := readMessage(c, &res); err != nil || res.ExitCode != 42 {
		t.Errorf("result %+v, %v; want exit code 42", res, err)
	}
}

func TestSessionEscalateWithStdio(t *testing.T) {
	d := &fakeDecider{dec: Decision{Action: Escalate}}
	child, stop := startServe(t, d)
	defer stop()
	r, w := pipe(t)
	req := wireRequest{File: "/bin/sh", Argv: []string{"sh", "-c", "echo out; echo err >&2; kill -TERM $$"},
		Workdir: "/", Env: map[string]string{"PATH": "/usr/bin:/bin"}}
	c, _ := ask(t, child, req)
	fds := []int{int(w.Fd()), int(w.Fd())}
	if err := writeMessage(c, superExecMessage{FDs: []int{1, 2}}, fds); err != nil {
		t.Fatal(err)
	}
	w.Close()
	var res superExecResult
	if err := readMessage(c, &res); err != nil || res.ExitCode != 128+15 {
		t.Errorf("result %+v, %v; want 143", res, err)
	}
	// The server closed its copies: EOF once our write end is closed.
	_ = r.SetReadDeadline(time.Now().Add(5 * time.Second))
	out, err := readAll(r)
	if err != nil {
		t.Errorf("reading the output: %v (the server kept a copy of the pipe?)", err)
	}
	if out != "out\nerr\n" {
		t.Errorf("output %q", out)
	}
}

func TestSessionRelativeFileResolvedInWorkdir(t *testing.T) {
	reason := "no"
	d := &fakeDecider{dec: Decision{Action: Deny, Reason: &reason}}
	child, stop := startServe(t, d)
	_, dec := ask(t, child, wireRequest{File: "./prog.sh", Argv: []string{"./prog.sh"}, Workdir: "/work/proj"})
	if dec.Action != Deny || dec.Reason == nil || *dec.Reason != "no" {
		t.Errorf("decision %+v, want Deny(no)", dec)
	}
	stop()
	if got := d.requests(); len(got) != 1 || got[0].File != "/work/proj/prog.sh" || got[0].Argv[0] != "./prog.sh" {
		t.Errorf("decider saw %+v, want /work/proj/prog.sh with argv[0] ./prog.sh", got)
	}
}

func TestSessionMismatchedFDs(t *testing.T) {
	d := &fakeDecider{dec: Decision{Action: Escalate}}
	child, stop := startServe(t, d)
	defer stop()
	c, _ := ask(t, child, wireRequest{File: "/bin/true", Argv: []string{"true"}, Workdir: "/"})
	if err := writeMessage(c, superExecMessage{FDs: []int{0, 1, 2}}, []int{0}); err != nil {
		t.Fatal(err)
	}
	// The session ends without running anything or answering.
	var res superExecResult
	if err := readMessage(c, &res); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("after a mismatched SuperExecMessage: %+v, %v; want EOF", res, err)
	}
}

func TestSessionEmptyFileDenied(t *testing.T) {
	d := &fakeDecider{dec: Decision{Action: Escalate}}
	child, stop := startServe(t, d)
	_, dec := ask(t, child, wireRequest{File: "", Argv: []string{""}, Workdir: "/"})
	stop()
	if dec.Action != Deny || len(d.requests()) != 0 {
		t.Errorf("decision %+v after %d decider calls, want Deny without asking", dec, len(d.requests()))
	}
}

func TestServeSkipsBadDatagramsAndStopsOnCancel(t *testing.T) {
	d := blockingDecider{entered: make(chan struct{})}
	child, stop := startServe(t, d)
	// A datagram without a descriptor, then a real session whose
	// decision blocks until Serve is cancelled.
	if _, err := unix.Write(int(child.Fd()), []byte{0}); err != nil {
		t.Fatal(err)
	}
	fd, err := connect(int(child.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := writeMessage(fdConn(fd), wireRequest{File: "/bin/true", Workdir: "/"}, nil); err != nil {
		t.Fatal(err)
	}
	<-d.entered
	stop() // returns only once the session has finished
	var resp wireResponse
	if err := readMessage(fdConn(fd), &resp); err != nil || resp.Decision.Action != Deny {
		// The decider denied on cancellation; whether the reply got out
		// before the socket was cut is a race, but never Run/Escalate.
		if err == nil {
			t.Errorf("decision after cancel: %+v", resp.Decision)
		}
	}
}

// TestServeBlockingSocket: a server end in blocking mode (not made by
// NewSocketPair) is served through a non-blocking duplicate, and
// cancellation still ends Serve.
func TestServeBlockingSocket(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	server, child := os.NewFile(uintptr(fds[0]), "server"), os.NewFile(uintptr(fds[1]), "child")
	defer server.Close()
	defer child.Close()
	stop := serveInBackground(t, server, &fakeDecider{dec: Decision{Action: Run}})
	defer stop()
	if _, dec := ask(t, child, wireRequest{File: "/bin/true", Workdir: "/"}); dec.Action != Run {
		t.Errorf("decision %+v", dec)
	}
}

// escalate runs the Escalate half of a session on c with fds as 0, 1, 2.
func escalate(t *testing.T, c fdConn, fds []int) {
	t.Helper()
	if err := writeMessage(c, superExecMessage{FDs: []int{0, 1, 2}[:len(fds)]}, fds); err != nil {
		t.Fatal(err)
	}
}

// TestSessionEscalatedFDHygiene: while another escalated program holds
// its descriptors, an escalated `ls /proc/self/fd` sees only its own 0-2
// (and ls's directory, 3): no session socket, no descriptor received for
// the other program, nothing of the server.
func TestSessionEscalatedFDHygiene(t *testing.T) {
	d := &fakeDecider{dec: Decision{Action: Escalate}}
	child, stop := startServe(t, d)
	defer stop()
	env := map[string]string{"PATH": "/usr/bin:/bin"}
	// A: cat, blocked on a stdin pipe we hold, writing to another pipe.
	inR, inW := pipe(t)
	outR, outW := pipe(t)
	ca, _ := ask(t, child, wireRequest{File: "/bin/cat", Argv: []string{"cat"}, Workdir: "/", Env: env})
	escalate(t, ca, []int{int(inR.Fd()), int(outW.Fd()), int(outW.Fd())})
	// B: list the descriptors.
	r, w := pipe(t)
	cb, _ := ask(t, child, wireRequest{File: "/bin/ls", Argv: []string{"ls", "/proc/self/fd"}, Workdir: "/", Env: env})
	escalate(t, cb, []int{int(w.Fd()), int(w.Fd()), int(w.Fd())})
	var res superExecResult
	if err := readMessage(cb, &res); err != nil || res.ExitCode != 0 {
		t.Fatalf("ls: %+v, %v", res, err)
	}
	w.Close()
	_ = r.SetReadDeadline(time.Now().Add(5 * time.Second))
	if out, err := readAll(r); err != nil || strings.Fields(out) == nil || strings.Join(strings.Fields(out), " ") != "0 1 2 3" {
		t.Errorf("escalated ls sees fds %q (%v), want 0 1 2 3", out, err)
	}
	// Let A finish: it copies, then sees EOF.
	inR.Close()
	outW.Close()
	inW.Write([]byte("bye"))
	inW.Close()
	if err := readMessage(ca, &res); err != nil || res.ExitCode != 0 {
		t.Errorf("cat: %+v, %v", res, err)
	}
	_ = outR.SetReadDeadline(time.Now().Add(5 * time.Second))
	if out, _ := readAll(outR); out != "bye" {
		t.Errorf("cat output %q", out)
	}
}

// ctxDecider blocks until its ctx is done and reports that on gone.
type ctxDecider struct{ entered, gone chan struct{} }

func (d ctxDecider) Decide(ctx context.Context, r Request) Decision {
	close(d.entered)
	<-ctx.Done()
	close(d.gone)
	return Decision{Action: Deny}
}

// TestSessionWrapperGone: when the wrapper's end of the session closes
// (the wrapper died), a pending decision is cancelled and an escalated
// program is killed, though the call goes on.
func TestSessionWrapperGone(t *testing.T) {
	t.Run("deciding", func(t *testing.T) {
		d := ctxDecider{entered: make(chan struct{}), gone: make(chan struct{})}
		child, _ := startServe(t, d)
		fd, err := connect(int(child.Fd()))
		if err != nil {
			t.Fatal(err)
		}
		if err := writeMessage(fdConn(fd), wireRequest{File: "/bin/true", Workdir: "/"}, nil); err != nil {
			t.Fatal(err)
		}
		<-d.entered
		unix.Close(fd)
		<-d.gone
	})
	t.Run("escalated", func(t *testing.T) {
		child, _ := startServe(t, &fakeDecider{dec: Decision{Action: Escalate}})
		r, w := pipe(t)
		c, _ := ask(t, child, wireRequest{File: "/bin/sh", Argv: []string{"sh", "-c", "echo $$; exec sleep 1000"}, Workdir: "/"})
		escalate(t, c, []int{int(w.Fd()), int(w.Fd()), int(w.Fd())})
		w.Close()
		line, err := bufio.NewReader(r).ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		unix.Shutdown(int(c), unix.SHUT_RDWR) // as if the wrapper died
		waitGone(t, strings.TrimSpace(line))
	})
}

// panicDecider panics for /bin/false and answers Run otherwise.
type panicDecider struct{}

func (d panicDecider) Decide(ctx context.Context, r Request) Decision {
	if r.File == "/bin/false" {
		panic("decider bug")
	}
	return Decision{Action: Run}
}

func TestSessionDeciderPanic(t *testing.T) {
	child, stop := startServe(t, panicDecider{})
	defer stop()
	fd, err := connect(int(child.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := writeMessage(fdConn(fd), wireRequest{File: "/bin/false", Workdir: "/"}, nil); err != nil {
		t.Fatal(err)
	}
	var resp wireResponse
	if err := readMessage(fdConn(fd), &resp); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("after a panic: %+v, %v; want the session closed", resp, err)
	}
	if _, dec := ask(t, child, wireRequest{File: "/bin/true", Workdir: "/"}); dec.Action != Run {
		t.Errorf("next session: %+v", dec)
	}
}
