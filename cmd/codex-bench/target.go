package main

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Target is one server under test together with its main client
// connection and its results.
type Target struct {
	Role     string // "ours", "ref", or "ref-cr32" (reference with --concurrent-requests 32)
	Srv      *Server
	Res      *ServerResult
	viol     *Violations
	quickAck bool

	mu  sync.Mutex // guards cli and Res.Checks
	cli *Client
}

// client returns the main connection, reconnecting if it died.
func (t *Target) client(ctx context.Context) (*Client, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cli != nil && t.cli.Alive() {
		return t.cli, nil
	}
	if t.cli != nil {
		t.cli.Close()
		t.cli = nil
		t.Res.Checks.Reconnects++
	}
	if !t.Srv.Running() {
		return nil, fmt.Errorf("%s server has exited", t.Role)
	}
	c, err := Dial(ctx, t.Srv.URL, t.quickAck, t.viol)
	if err != nil {
		return nil, err
	}
	t.cli = c
	return c, nil
}

// dial opens an extra connection to the server (used by the K-connection
// concurrency metric).
func (t *Target) dial(ctx context.Context) (*Client, error) {
	return Dial(ctx, t.Srv.URL, t.quickAck, t.viol)
}

// close closes the main connection.
func (t *Target) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cli != nil {
		t.cli.Close()
		t.cli = nil
	}
}

// checkExit records a wrong or missing exit code.
func (t *Target) checkExit(p *Proc, want int, what string) bool {
	if p.ExitCode != nil && *p.ExitCode == want {
		return true
	}
	got := "null"
	if p.ExitCode != nil {
		got = fmt.Sprint(*p.ExitCode)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.Res.Checks.ExitCodeErrors++
	if len(t.Res.Checks.ExitCodeNotes) < 10 {
		t.Res.Checks.ExitCodeNotes = append(t.Res.Checks.ExitCodeNotes,
			fmt.Sprintf("%s: exit code %s, want %d", what, got, want))
	}
	return false
}

// setError records a metric failure.
func (t *Target) setError(metric string, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.Res.Errors == nil {
		t.Res.Errors = map[string]string{}
	}
	t.Res.Errors[metric] = err.Error()
}

// cleanup terminates a process that did not finish in time (best effort).
func (t *Target) cleanup(c *Client, p *Proc) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = c.Terminate(ctx, p)
	_ = p.Wait(ctx, 5*time.Second)
}
