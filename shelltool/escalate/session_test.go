package escalate

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"testing"

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
	return d.dec
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
	w := wireRequest{File: "/bin/sh", Argv: []string{"sh", "-c", `test "$KEY" = VALUE && exit 42; exit 1`},
		Workdir: dir, Env: map[string]string{"KEY": "VALUE"}}
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
	out, _ := readAll(r)
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
