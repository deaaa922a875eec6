package unifiedexec_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codexec/codex/unifiedexec"
)

// proxy forwards TCP connections to target; drop cuts every live one.
type proxy struct {
	ln       net.Listener
	target   string
	mu       sync.Mutex
	conns    []net.Conn // guarded by mu
	accepted int        // guarded by mu
	wg       sync.WaitGroup
}

func newProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.serve()
	return p
}

func (p *proxy) serve() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, in, out)
		p.accepted++
		p.mu.Unlock()
		p.wg.Add(2)
		go func() { defer p.wg.Done(); _, _ = io.Copy(out, in); out.Close() }()
		go func() { defer p.wg.Done(); _, _ = io.Copy(in, out); in.Close() }()
	}
}

func (p *proxy) drop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *proxy) close() {
	p.ln.Close()
	p.drop()
	p.wg.Wait()
}

func TestReconnectThroughProxy(t *testing.T) {
	t.Parallel()
	url, stop, err := startWSServer()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	px := newProxy(t, strings.TrimPrefix(url, "ws://"))
	defer px.close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := unifiedexec.Dial(ctx, "ws://"+px.ln.Addr().String(), unifiedexec.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	session := c.SessionID()

	const lines = 400
	var streamed strings.Builder
	var smu sync.Mutex
	halfway := make(chan struct{}, 1)
	script := fmt.Sprintf(`i=0; while [ $i -lt %d ]; do echo line$i; i=$((i+1)); if [ $i -eq 50 ]; then sleep 0.3; fi; sleep 0.002; done`, lines)
	p, err := c.Start(ctx, unifiedexec.StartOptions{
		Argv: []string{"sh", "-c", script},
		OnOutput: func(ch unifiedexec.Chunk) {
			smu.Lock()
			streamed.Write(ch.Data)
			n := strings.Count(streamed.String(), "\n")
			smu.Unlock()
			if n >= 20 {
				select {
				case halfway <- struct{}{}:
				default:
				}
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	<-halfway
	px.drop()
	st, err := p.Wait(ctx)
	if err != nil || st.Code != 0 {
		t.Fatalf("Wait: %+v %v", st, err)
	}
	var want strings.Builder
	for i := range lines {
		fmt.Fprintf(&want, "line%d\n", i)
	}
	got := p.Current().Stdout
	if string(got) != want.String() {
		t.Fatalf("captured output differs: %d bytes, want %d", len(got), want.Len())
	}
	smu.Lock()
	same := streamed.String() == want.String()
	smu.Unlock()
	if !same {
		t.Fatal("streamed output lost or duplicated bytes")
	}
	px.mu.Lock()
	accepted := px.accepted
	px.mu.Unlock()
	if accepted < 2 || c.SessionID() != session {
		t.Fatalf("accepted %d connections, session %s -> %s", accepted, session, c.SessionID())
	}
	// The resumed connection serves new calls.
	q, err := c.Start(ctx, unifiedexec.StartOptions{Argv: []string{"echo", "after"}})
	if err != nil {
		t.Fatal(err)
	}
	if out, _, _, err := q.Communicate(ctx, nil); err != nil || string(out) != "after\n" {
		t.Fatalf("after resume: %q %v", out, err)
	}
}
