package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// collect reads responses until every id in want was answered once. It fails
// on a duplicate answer, on an id not asked for, or after the timeout.
func (c *client) collect(want map[string]bool, timeout time.Duration) map[string]response {
	c.t.Helper()
	got := map[string]response{}
	deadline := time.After(timeout)
	for len(got) < len(want) {
		select {
		case m, ok := <-c.msgs:
			if !ok {
				c.t.Fatalf("connection closed with %d of %d answers", len(got), len(want))
			}
			r := response{ID: m["id"], Result: m["result"]}
			if e, ok := m["error"]; ok {
				_ = json.Unmarshal(e, &r.Error)
			}
			id := string(r.ID)
			if !want[id] {
				c.t.Fatalf("unexpected answer %s %s", id, r.Result)
			}
			if _, dup := got[id]; dup {
				c.t.Fatalf("request %s answered twice", id)
			}
			got[id] = r
		case <-deadline:
			c.t.Fatalf("only %d of %d answers within %v", len(got), len(want), timeout)
		}
	}
	return got
}

// A child that never reads its stdin must not hold up the connection: the
// writes to it are parked, an unrelated read is answered at once, the parked
// writes are answered (in order) once the child is gone, and a write beyond
// the parking budget is refused instead of growing the server's memory.
func TestStdinBackpressureDoesNotBlockOthers(t *testing.T) {
	s := startServer(t, "--max-parked-stdin-bytes", "1048576")
	c := dial(t, s.URL, nil)
	c.handshake()
	p := startParams("stuck", "/bin/sleep", "1000")
	p["pipeStdin"] = true
	c.ok("process/start", p, nil)
	c.run("other", startParams("other", "/bin/echo", "hello"))

	chunk := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("x"), 4<<10))
	writes := map[string]bool{}
	for i := 0; i < 300; i++ {
		id := c.send("process/write", map[string]any{"processId": "stuck", "chunk": chunk, "writeId": strconv.Itoa(i)})
		writes[itoa(id)] = true
	}
	start := time.Now()
	readID := c.send("process/read", map[string]any{"processId": "other"})
	var accepted int
	for {
		r := c.next()
		if string(r.ID) == itoa(readID) {
			break
		}
		if !writes[string(r.ID)] {
			t.Fatalf("unexpected answer %s", r.ID)
		}
		delete(writes, string(r.ID))
		accepted++
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("read of an unrelated process answered after %v, behind a blocked write", el)
	}
	if accepted >= 300 {
		t.Fatalf("all %d writes accepted by a child that reads nothing", accepted)
	}
	t.Logf("%d writes accepted before the queue filled; read answered in %v", accepted, time.Since(start))

	// Beyond the parking budget, a write is refused at once.
	big := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("y"), 1<<20))
	r := c.call2("process/write", map[string]any{"processId": "stuck", "chunk": big, "writeId": "big"}, writes)
	if r.Error == nil || r.Error.Code != -32600 || !strings.Contains(r.Error.Message, "stdin") {
		t.Fatalf("write beyond the budget: %+v %s", r.Error, r.Result)
	}

	// Terminating the child releases every parked write, each answered once.
	termID := c.send("process/terminate", map[string]any{"processId": "stuck"})
	writes[itoa(termID)] = true
	writes[itoa(c.send("environment/status", nil))] = true
	got := c.collect(writes, 20*time.Second)
	for id, r := range got {
		if r.Error != nil {
			t.Fatalf("answer %s: error %+v", id, r.Error)
		}
	}
	c.events("stuck", 10*time.Second)
}

// call2 sends a request and returns its answer, setting aside answers to
// the ids in other (deleting them from other).
func (c *client) call2(method string, params any, other map[string]bool) response {
	c.t.Helper()
	id := c.send(method, params)
	for {
		r := c.next()
		if string(r.ID) == itoa(id) {
			return r
		}
		if !other[string(r.ID)] {
			c.t.Fatalf("unexpected answer %s", r.ID)
		}
		delete(other, string(r.ID))
	}
}

// Parked writes reach the child's stdin in request order.
func TestParkedWritesKeepOrder(t *testing.T) {
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()
	dir := t.TempDir()
	gate := filepath.Join(dir, "go")
	p := startParams("slow", "/bin/sh", "-c", "while [ ! -e "+gate+" ]; do sleep 0.01; done; exec cat")
	p["pipeStdin"] = true
	c.ok("process/start", p, nil)
	var want bytes.Buffer
	ids := map[string]bool{}
	for i := 0; i < 400; i++ {
		b := fmt.Appendf(nil, "%05d%s\n", i, strings.Repeat("z", 8000))
		want.Write(b)
		ids[itoa(c.send("process/write", map[string]any{"processId": "slow", "chunk": base64.StdEncoding.EncodeToString(b), "writeId": strconv.Itoa(i)}))] = true
	}
	// A retry of a parked write id is not written twice.
	ids[itoa(c.send("process/write", map[string]any{"processId": "slow", "chunk": "QUFBQQ==", "writeId": "399"}))] = true
	ids[itoa(c.send("process/closeStdin", map[string]any{"processId": "slow"}))] = true
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for id, r := range c.collect(ids, 30*time.Second) {
		if r.Error != nil || !strings.Contains(string(r.Result), "accepted") {
			t.Fatalf("write %s: %+v %s", id, r.Error, r.Result)
		}
	}
	out, code := checkEvents(t, c.events("slow", 20*time.Second))
	if code != 0 || out != want.String() {
		t.Fatalf("cat echoed %d bytes (code %d), want %d bytes in order", len(out), code, want.Len())
	}
}

// markedProcesses lists the pids whose command line contains marker.
func markedProcesses(marker string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && bytes.Contains(b, []byte(marker)) && alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// A terminate pipelined right behind its start sees the process: it is
// killed, reports running:true, gets exited and closed, and nothing is left.
func TestPipelinedStartTerminate(t *testing.T) {
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()
	marker := fmt.Sprintf("4242.%09d", rand.IntN(1e9))
	ids := map[string]bool{}
	terms := map[string]string{}
	for i := 0; i < 20; i++ {
		pid := fmt.Sprintf("pt%d", i)
		ids[itoa(c.send("process/start", startParams(pid, "/bin/sleep", marker)))] = true
		tid := itoa(c.send("process/terminate", map[string]any{"processId": pid}))
		ids[tid] = true
		terms[tid] = pid
	}
	got := c.collect(ids, 20*time.Second)
	for id, r := range got {
		if r.Error != nil {
			t.Fatalf("answer %s: %+v", id, r.Error)
		}
		if pid, ok := terms[id]; ok && string(r.Result) != `{"running":true}` {
			t.Errorf("terminate of %s right after its start: %s", pid, r.Result)
		}
	}
	for _, pid := range terms {
		if _, code := checkEvents(t, c.events(pid, 10*time.Second)); code != 137 {
			t.Errorf("%s: exit code %d, want 137", pid, code)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for left := markedProcesses(marker); len(left) > 0; left = markedProcesses(marker) {
		if time.Now().After(deadline) {
			for _, p := range left {
				_ = syscall.Kill(p, syscall.SIGKILL)
			}
			t.Fatalf("%d processes left running: %v", len(left), left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A request whose method is a 1 MiB string gets one small answer, and the
// connection keeps serving.
func TestHugeMethodNameAnswered(t *testing.T) {
	t.Parallel()
	method := strings.Repeat("m", 1<<20)
	t.Run("websocket", func(t *testing.T) {
		s := startServer(t)
		c := dial(t, s.URL, nil)
		for _, init := range []bool{false, true} {
			if init {
				c.handshake()
			}
			id := c.send(method, map[string]any{})
			r := c.next()
			if string(r.ID) != itoa(id) || r.Error == nil || r.Error.Code != -32601 {
				t.Fatalf("answer %s %+v", r.ID, r.Error)
			}
			if len(r.Error.Message) > 4096 {
				t.Fatalf("error message of %d bytes echoes the whole method", len(r.Error.Message))
			}
			if r := c.call("environment/status", nil); r.Error != nil && init {
				t.Fatalf("later request: %+v", r.Error)
			}
		}
		// Other echoed fields: a process id, a signal name, a path.
		for _, q := range []struct {
			method string
			params map[string]any
		}{
			{"process/read", map[string]any{"processId": method}},
			{"process/signal", map[string]any{"processId": "p", "signal": method}},
			{"process/start", map[string]any{"processId": "p", "argv": []string{"true"}, "cwd": "file://[" + method, "env": map[string]string{}, "tty": false}},
		} {
			r := c.call(q.method, q.params)
			if r.Error == nil || len(r.Error.Message) > 4096 {
				t.Fatalf("%s with a 1 MiB field: %d-byte error message", q.method, len(r.Error.Message))
			}
		}
	})
	t.Run("stdio", func(t *testing.T) {
		s := startStdio(t)
		for i, pre := range []string{"", `{"id":100,"method":"initialize","params":{"clientName":"x"}}` + "\n" + `{"method":"initialized"}` + "\n"} {
			if pre != "" {
				s.send(t, pre)
				if m := s.recv(t); m["id"] != float64(100) {
					t.Fatalf("initialize: %v", m)
				}
			}
			b, _ := json.Marshal(map[string]any{"id": i + 1, "method": method, "params": map[string]any{}})
			s.send(t, string(b)+"\n"+`{"id":50,"method":"environment/status"}`+"\n")
			// A control request may overtake the other after the handshake.
			got := map[float64]map[string]any{}
			for len(got) < 2 {
				m := s.recv(t)
				id, _ := m["id"].(float64)
				got[id] = m
			}
			e, _ := got[float64(i+1)]["error"].(map[string]any)
			if e == nil || e["code"] != float64(-32601) || got[50] == nil {
				t.Fatalf("answers %v", got)
			}
		}
	})
}

// A long poll parked when the server shuts down is answered (with an error)
// before the connection closes, not dropped.
func TestShutdownAnswersParkedRequests(t *testing.T) {
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()
	c.ok("process/start", startParams("lp", "/bin/sleep", "1000"), nil)
	ids := map[string]bool{}
	for i := 0; i < 3; i++ {
		ids[itoa(c.send("process/read", map[string]any{"processId": "lp", "afterSeq": 0, "waitMs": 60000}))] = true
	}
	c.ok("environment/status", nil, nil) // the reads are parked now
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	got := map[string]response{}
	timeout := time.After(10 * time.Second)
	for len(got) < len(ids) {
		select {
		case m, ok := <-c.msgs:
			if !ok {
				t.Fatalf("closed with %d of %d parked reads answered", len(got), len(ids))
			}
			r := response{ID: m["id"], Result: m["result"]}
			if e, ok := m["error"]; ok {
				_ = json.Unmarshal(e, &r.Error)
			}
			if !ids[string(r.ID)] {
				t.Fatalf("unexpected answer %s", r.ID)
			}
			if _, dup := got[string(r.ID)]; dup {
				t.Fatalf("read %s answered twice", r.ID)
			}
			got[string(r.ID)] = r
		case <-timeout:
			t.Fatal("parked reads not answered at shutdown")
		}
	}
	select {
	case _, ok := <-c.msgs:
		if ok {
			t.Fatal("a message after the answers to the parked reads")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("connection not closed")
	}
}
