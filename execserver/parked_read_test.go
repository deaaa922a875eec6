package execserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codexec/codex/rpc"
)

// rawClient speaks to a server connection over net.Pipe line by line, so
// that a test decides when (and whether) to read.
type rawClient struct {
	t   *testing.T
	z   net.Conn
	r   *bufio.Reader
	srv *rpc.Conn

	seen map[string]rawAnswer // answers read while waiting for another, by id
}

func (s *testServer) dialRaw(t *testing.T) *rawClient {
	t.Helper()
	return s.dialRawWith(t, nil)
}

// dialRawWith is dialRaw with the server's writes to the pipe going
// through wrap(its end), when wrap is not nil.
func (s *testServer) dialRawWith(t *testing.T, wrap func(net.Conn) io.Writer) *rawClient {
	t.Helper()
	a, z := net.Pipe()
	rc := &rawClient{t: t, z: z, r: bufio.NewReader(z), seen: map[string]rawAnswer{}}
	var w io.Writer = a
	if wrap != nil {
		w = wrap(a)
	}
	rc.srv = rpc.NewConn(rpc.NewStdioFramer(a, w, a, "server", 1<<20), rpc.Options{Bind: s.bind.Bind})
	t.Cleanup(func() {
		_ = z.Close()
		rc.srv.Wait()
	})
	rc.send(`{"id":"init","method":"initialize","params":{"clientName":"t"}}`)
	rc.answer("init")
	rc.send(`{"method":"initialized"}`)
	return rc
}

// send writes one message, failing the test after 10 s.
func (rc *rawClient) send(line string) {
	rc.t.Helper()
	_ = rc.z.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := rc.z.Write([]byte(line + "\n")); err != nil {
		rc.t.Fatalf("send %.80s: %v", line, err)
	}
}

type rawAnswer struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *rpc.Error      `json:"error"`
}

// answer returns the answer to the string id, reading messages until it
// comes; notifications are skipped and other answers kept for later. It
// fails the test when none came within 10 s.
func (rc *rawClient) answer(id string) rawAnswer {
	rc.t.Helper()
	want, _ := json.Marshal(id)
	if a, ok := rc.seen[string(want)]; ok {
		delete(rc.seen, string(want))
		return a
	}
	_ = rc.z.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		line, err := rc.r.ReadBytes('\n')
		if err != nil {
			rc.t.Fatalf("waiting for the answer to %s: %v", id, err)
		}
		var a rawAnswer
		if err := json.Unmarshal(line, &a); err != nil {
			rc.t.Fatalf("%q: %v", line, err)
		}
		if string(a.ID) == string(want) {
			return a
		}
		if a.ID != nil {
			rc.seen[string(a.ID)] = a
		}
	}
}

// TestParkedReadsBounded parks MaxParkedReads long polls on one
// connection: the next one is refused at once with -32603, and once the
// parked ones were answered a read waits again. Without the bound every
// long poll held a goroutine until its waitMs: 200,000 of them, sent in
// 4.5 s over a WebSocket, held 1.25 GB of the server's memory.
func TestParkedReadsBounded(t *testing.T) {
	s := newTestServer(t, SessionConfig{})
	rc := s.dialRaw(t)
	for _, id := range []string{"p", "q"} {
		b, _ := json.Marshal(map[string]any{"id": "start-" + id, "method": "process/start", "params": startParams(id, "exec sleep 60")})
		rc.send(string(b))
		if a := rc.answer("start-" + id); a.Error != nil {
			t.Fatalf("process/start %s: %v", id, a.Error)
		}
	}
	read := func(id, pid string) string {
		return fmt.Sprintf(`{"id":%q,"method":"process/read","params":{"processId":%q,"afterSeq":0,"waitMs":60000}}`, id, pid)
	}
	var b strings.Builder
	for i := range MaxParkedReads {
		b.WriteString(read(fmt.Sprint("r", i), "p") + "\n")
	}
	rc.send(strings.TrimSuffix(b.String(), "\n"))
	rc.send(read("over", "p"))
	a := rc.answer("over")
	if a.Error == nil || a.Error.Code != rpc.CodeInternalError || !strings.Contains(a.Error.Message, fmt.Sprintf("%d reads waiting", MaxParkedReads)) {
		t.Fatalf("read beyond %d parked ones: %s %v, want -32603 saying so", MaxParkedReads, a.Result, a.Error)
	}
	// The exit of p answers its parked reads; a read of q then waits
	// again until q exits.
	rc.send(`{"id":"kill-p","method":"process/terminate","params":{"processId":"p"}}`)
	rc.answer("kill-p")
	for i := range MaxParkedReads {
		if a := rc.answer(fmt.Sprint("r", i)); a.Error != nil {
			t.Fatalf("parked read r%d: %v", i, a.Error)
		}
	}
	rc.send(read("again", "q"))
	rc.send(`{"id":"kill-q","method":"process/terminate","params":{"processId":"q"}}`)
	var res struct {
		Exited bool `json:"exited"`
	}
	a = rc.answer("again")
	if a.Error != nil || json.Unmarshal(a.Result, &res) != nil || !res.Exited {
		t.Fatalf("read of q after the parked reads were answered: %s %v, want a result with q exited", a.Result, a.Error)
	}
}

// stallAfterWrite passes the server's writes on and, after the one that
// carries match, holds the writer until release is closed (at most 10 s):
// the answer has reached the client, and its writer is not yet done with
// it, as when the scheduler runs the client first.
type stallAfterWrite struct {
	io.Writer
	match   []byte
	stalled chan struct{}
	release chan struct{}
}

func (s *stallAfterWrite) Write(b []byte) (int, error) {
	n, err := s.Writer.Write(b)
	if bytes.Contains(b, s.match) {
		close(s.stalled)
		select {
		case <-s.release:
		case <-time.After(10 * time.Second):
		}
	}
	return n, err
}

// TestParkedReadUncountedOnceAnswered: a parked read stops counting among
// the MaxParkedReads before its answer reaches the client, so a client at
// the bound that got an answer may park another read at once. The count
// used to be released only after the write returned: a read sent on the
// answer could be refused (-32603 ... reads waiting) when the answering
// goroutine had not run on yet.
func TestParkedReadUncountedOnceAnswered(t *testing.T) {
	s := newTestServer(t, SessionConfig{})
	dir := t.TempDir()
	trigger, mark := filepath.Join(dir, "go"), filepath.Join(dir, "mark")
	stall := &stallAfterWrite{match: []byte(`"id":"rp"`), stalled: make(chan struct{}), release: make(chan struct{})}
	rc := s.dialRawWith(t, func(c net.Conn) io.Writer { stall.Writer = c; return stall })
	released := false
	release := func() {
		if !released {
			released = true
			close(stall.release)
		}
	}
	t.Cleanup(release) // before the connection's cleanup waits for its writer
	starts := map[string]string{
		"p": fmt.Sprintf("while [ ! -e %s ]; do sleep 0.01; done", trigger),
		"q": "exec sleep 60",
	}
	for _, id := range []string{"p", "q"} {
		b, _ := json.Marshal(map[string]any{"id": "start-" + id, "method": "process/start", "params": startParams(id, starts[id])})
		rc.send(string(b))
		if a := rc.answer("start-" + id); a.Error != nil {
			t.Fatalf("process/start %s: %v", id, a.Error)
		}
	}
	read := func(id, pid string) string {
		return fmt.Sprintf(`{"id":%q,"method":"process/read","params":{"processId":%q,"afterSeq":0,"waitMs":60000}}`, id, pid)
	}
	// MaxParkedReads wait: one on p, the others on q.
	var b strings.Builder
	b.WriteString(read("rp", "p") + "\n")
	for i := range MaxParkedReads - 1 {
		b.WriteString(read(fmt.Sprint("q", i), "q") + "\n")
	}
	b.WriteString(`{"id":"sync","method":"process/read","params":{"processId":"q"}}`)
	rc.send(b.String())
	rc.answer("sync")
	// p exits: its read is answered, and its writer lingers after the
	// write. The client, which has the answer, parks another read.
	if err := os.WriteFile(trigger, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if a := rc.answer("rp"); a.Error != nil {
		t.Fatalf("read of p: %v", a.Error)
	}
	select {
	case <-stall.stalled:
	case <-time.After(10 * time.Second):
		t.Fatal("the answer to rp was not written")
	}
	rc.send(read("again", "q"))
	// A start behind it shows that it was handled (requests run in
	// order; a refusal would wait for the writer and hold up the start).
	st, _ := json.Marshal(map[string]any{"id": "start-r", "method": "process/start", "params": startParams("r", "exec touch "+mark)})
	rc.send(string(st))
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(mark); err == nil {
			break
		}
	}
	release()
	rc.send(`{"id":"kill-q","method":"process/terminate","params":{"processId":"q"}}`)
	var res struct {
		Exited bool `json:"exited"`
	}
	a := rc.answer("again")
	if a.Error != nil || json.Unmarshal(a.Result, &res) != nil || !res.Exited {
		t.Fatalf("a read sent once the client had an answer at the bound: %s %v, want it to wait and see q exited", a.Result, a.Error)
	}
}
