package unifiedexec_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/unifiedexec"
)

func wsServer(t *testing.T) (context.Context, string) {
	t.Helper()
	url, stop, err := startWSServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx, url
}

// readUntilClosed reads id through c until the server reports it closed.
func readUntilClosed(ctx context.Context, t *testing.T, c *unifiedexec.Client, id string) (out string, code int) {
	t.Helper()
	var after uint64
	for {
		res, err := c.Read(ctx, unifiedexec.ReadRequest{ProcessID: id, AfterSeq: after, Wait: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		for _, ch := range res.Chunks {
			out += string(ch.Chunk)
		}
		after = res.NextSeq - 1
		if res.Closed {
			if res.ExitCode != nil {
				code = *res.ExitCode
			}
			return out, code
		}
	}
}

// The zero DialOptions: Close kills the session's processes (SIGKILL, 137)
// before it detaches.
func TestCloseKillsProcesses(t *testing.T) {
	ctx, url := wsServer(t)
	c, err := unifiedexec.Dial(ctx, url, unifiedexec.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Start(ctx, unifiedexec.StartOptions{Argv: []string{"sleep", "30"}})
	if err != nil {
		t.Fatal(err)
	}
	id, session := p.ID(), c.SessionID()
	c.Close()
	r, err := unifiedexec.Dial(ctx, url, unifiedexec.DialOptions{ResumeSessionID: session})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.SessionID() != session {
		t.Fatalf("resumed %q, want %q", r.SessionID(), session)
	}
	if _, code := readUntilClosed(ctx, t, r, id); code != 137 {
		t.Fatalf("exit code %d, want 137 (killed by Close)", code)
	}
}

// KeepSession leaves the processes running; ResumeSessionID reattaches
// and drives them by id. An unknown session id fails the Dial by code.
func TestKeepSessionAndResume(t *testing.T) {
	ctx, url := wsServer(t)
	c, err := unifiedexec.Dial(ctx, url, unifiedexec.DialOptions{KeepSession: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Start(ctx, unifiedexec.StartOptions{Argv: []string{"/bin/sh", "-c", "read l; echo got $l"}, PipeStdin: true})
	if err != nil {
		t.Fatal(err)
	}
	id, session := p.ID(), c.SessionID()
	c.Close()
	r, err := unifiedexec.Dial(ctx, url, unifiedexec.DialOptions{ResumeSessionID: session})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if st, err := r.Write(ctx, unifiedexec.WriteRequest{ProcessID: id, Data: []byte("later\n")}); err != nil || st != "accepted" {
		t.Fatalf("write after resume: %q %v", st, err)
	}
	if out, code := readUntilClosed(ctx, t, r, id); out != "got later\n" || code != 0 {
		t.Fatalf("out %q code %d", out, code)
	}

	_, err = unifiedexec.Dial(ctx, url, unifiedexec.DialOptions{ResumeSessionID: "no-such-session"})
	var we *unifiedexec.WireError
	if !errors.Is(err, rpc.ErrInvalidRequest) || !errors.As(err, &we) || we.Method != "initialize" {
		t.Fatalf("unknown session: %v", err)
	}
	if !strings.Contains(err.Error(), "no-such-session") {
		t.Fatalf("the error does not name the session: %v", err)
	}
}
