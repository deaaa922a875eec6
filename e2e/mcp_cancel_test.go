package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// mcpID is the id of an MCP message, raw ("null" or absent for a
// notification).
func mcpID(t *testing.T, line string) string {
	t.Helper()
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatalf("not JSON from exec-mcp-server: %s", line)
	}
	return string(m.ID)
}

// TestMCPCancelledCallGetsNoResult: a tools/call cancelled with
// notifications/cancelled is not answered (MCP cancellation: the receiver
// should not send a response for a cancelled request), its command tree is
// killed, and the server goes on serving. It used to send the call's result
// a few milliseconds after the cancel.
func TestMCPCancelledCallGetsNoResult(t *testing.T) {
	s := startMCP(t, "/bin/bash")
	ws := canonicalTemp(t)
	mark := fmt.Sprintf("9%06d.5", rand.IntN(1_000_000))
	defer killMarked(t, mark)
	s.startCall(t, 7, "sh -c 'sleep "+mark+"' & until [ -e go ]; do sleep 0.05; done; sleep 60", ws, disabledProfile, ws, 60000)
	for deadline := time.Now().Add(10 * time.Second); len(markedPidsOf(mark)) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the call's command never started")
		}
	}
	if err := os.WriteFile(filepath.Join(ws, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the call is in its sleep 60
	s.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"user"}}`)
	if left := marksGone(mark, 2*time.Second); len(left) > 0 {
		t.Errorf("the cancelled call's command tree still runs (sleep %s)", mark)
	}
	// Whatever the server sends until a ping issued after the tree is gone
	// is answered, and for a moment after, must not answer the call.
	s.send(t, `{"jsonrpc":"2.0","id":8,"method":"ping"}`)
	for {
		line := s.recv(t)
		if id := mcpID(t, line); id == "7" {
			t.Fatalf("the cancelled call got an answer: %s", line)
		} else if id == "8" {
			break
		}
	}
	select {
	case line := <-s.lines:
		t.Fatalf("unexpected message after the ping's answer: %s", line)
	case <-time.After(500 * time.Millisecond):
	}
	// The server goes on: a new call is answered.
	if r := s.call(t, 9, "echo after", ws, disabledProfile, ws, 30000); r.Output != "after\n" || r.ExitCode != 0 {
		t.Errorf("call after the cancel: %+v", r)
	}
}
