package execserver

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/codexec/codex/rpc"
)

// attachedSessions returns the ids of the sessions of r that a connection
// holds.
func (r *Registry) attachedSessions() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ids []string
	for id, s := range r.sessions {
		if s.attached.Load() != nil {
			ids = append(ids, id)
		}
	}
	return ids
}

// TestInitializeAtConnectionEndDetaches sends initialize and goes away at
// once, again and again. Once a connection has ended, the session its
// initialize made is detached, whatever the order in which the handler
// goroutine and the end of the connection ran: a session left attached to
// a dead connection is never resumable (-32010), never expires, and holds
// a place of --max-sessions that no new session may take (1 drop in 10
// left one before the fix, over a real WebSocket).
func TestInitializeAtConnectionEndDetaches(t *testing.T) {
	s := newTestServer(t, SessionConfig{})
	const rounds = 300
	for range rounds {
		a, z := net.Pipe()
		srv := rpc.NewConn(rpc.NewStdioFramer(a, a, a, "server", 1<<20), rpc.Options{Bind: s.bind.Bind})
		go func() {
			_, _ = z.Write([]byte(`{"id":1,"method":"initialize","params":{"clientName":"t"}}` + "\n"))
			_ = z.Close()
		}()
		srv.Wait()
	}
	if ids := s.reg.attachedSessions(); len(ids) > 0 {
		t.Fatalf("%d of %d sessions are attached to a connection that ended", len(ids), rounds)
	}
}

// TestConcurrentInitializeOnce sends 8 initialize requests at once on a
// connection that runs 8 requests at once (--concurrent-requests 8): one
// succeeds and the others are refused, and once the connection ended no
// session is left attached to it. Two that both passed the handshake
// check made two sessions, and the one the connection forgot stayed
// attached for good.
func TestConcurrentInitializeOnce(t *testing.T) {
	s := newTestServer(t, SessionConfig{})
	const rounds, n = 500, 8
	for round := range rounds {
		a, z := net.Pipe()
		srv := rpc.NewConn(rpc.NewStdioFramer(a, a, a, "server", 1<<20), rpc.Options{Bind: s.bind.Bind, Concurrency: n})
		go func() {
			var b strings.Builder
			for i := range n {
				fmt.Fprintf(&b, `{"id":%d,"method":"initialize","params":{"clientName":"t"}}`+"\n", i)
			}
			_, _ = z.Write([]byte(b.String()))
		}()
		_ = z.SetReadDeadline(time.Now().Add(10 * time.Second))
		r := bufio.NewReader(z)
		ok := 0
		for range n {
			line, err := r.ReadBytes('\n')
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			var m struct {
				Result json.RawMessage `json:"result"`
			}
			if err := json.Unmarshal(line, &m); err != nil {
				t.Fatalf("round %d: %q: %v", round, line, err)
			}
			if m.Result != nil {
				ok++
			}
		}
		_ = z.Close()
		srv.Wait()
		if ok != 1 {
			t.Errorf("round %d: %d of %d concurrent initialize requests succeeded, want 1", round, ok, n)
		}
	}
	if ids := s.reg.attachedSessions(); len(ids) > 0 {
		t.Fatalf("%d sessions are attached to a connection that ended", len(ids))
	}
}
