package e2e

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

type readRes struct {
	Chunks []struct {
		Seq    int    `json:"seq"`
		Stream string `json:"stream"`
		Chunk  string `json:"chunk"`
	} `json:"chunks"`
	NextSeq          int     `json:"nextSeq"`
	Exited           bool    `json:"exited"`
	ExitCode         *int    `json:"exitCode"`
	Closed           bool    `json:"closed"`
	Failure          *string `json:"failure"`
	SandboxDenied    bool    `json:"sandboxDenied"`
	Truncated        *bool   `json:"truncated"`
	FirstRetainedSeq *int    `json:"firstRetainedSeq"`
	EvictedBytes     *int    `json:"evictedBytes"`
}

func (r readRes) text() string {
	var b strings.Builder
	for _, c := range r.Chunks {
		d, _ := base64.StdEncoding.DecodeString(c.Chunk)
		b.Write(d)
	}
	return b.String()
}

func TestResumeSession(t *testing.T) {
	s := startServer(t, "--session-ttl", "3s")
	c1 := dial(t, s.URL, nil)
	sid := c1.handshake()
	p := startParams("r1", "/bin/sh", "-c", "echo one; read x; echo two:$x")
	p["pipeStdin"] = true
	c1.ok("process/start", p, nil)
	waitOutput(t, c1, "r1", "one")

	// A second attach while the first is live is refused.
	c2 := dial(t, s.URL, nil)
	c2.fail("initialize", map[string]any{"clientName": "e2e", "resumeSessionId": sid}, -32010, "session "+sid+" is already attached to another connection")
	c1.close()

	var res struct {
		SessionID string `json:"sessionId"`
	}
	resumed := c2.resume(sid)
	if resumed.Error != nil {
		t.Fatalf("resume after the close: %d %s", resumed.Error.Code, resumed.Error.Message)
	}
	if err := json.Unmarshal(resumed.Result, &res); err != nil || res.SessionID != sid {
		t.Fatalf("resumed session id %s, want %s", res.SessionID, sid)
	}
	c2.sendRaw(`{"method":"initialized"}`)
	var rd readRes
	c2.ok("process/read", map[string]any{"processId": "r1", "afterSeq": 0, "maxBytes": nil, "waitMs": 0}, &rd)
	if rd.text() != "one\n" || rd.Exited || rd.NextSeq != 2 {
		t.Fatalf("catch-up read %+v", rd)
	}
	c2.ok("process/write", map[string]any{"processId": "r1", "chunk": base64.StdEncoding.EncodeToString([]byte("x\n")), "writeId": "1"}, nil)
	evs := c2.events("r1", 10*time.Second)
	if len(evs) != 3 || evs[0].Params["seq"].(float64) != 2 {
		t.Fatalf("events after resume: %v", evs)
	}
}

func TestSessionExpiryKillsTree(t *testing.T) {
	s := startServer(t, "--session-ttl", "300ms")
	c1 := dial(t, s.URL, nil)
	sid := c1.handshake()
	pid := startEscapee(t, c1, "x")
	c1.close()
	waitGone(t, pid)
	c2 := dial(t, s.URL, nil)
	c2.fail("initialize", map[string]any{"clientName": "e2e", "resumeSessionId": sid}, -32600, "unknown session id "+sid)
}

func TestReadSemantics(t *testing.T) {
	s := startServer(t, "--retained-output-bytes", "4096")
	c := dial(t, s.URL, nil)
	c.handshake()
	c.run("big", startParams("big", "/bin/sh", "-c", "for i in $(seq 1 20); do for j in $(seq 1 10); do printf '%099d\\n' $((i*10+j-10)); done; sleep 0.01; done"))
	var rd readRes
	c.ok("process/read", map[string]any{"processId": "big", "includeTruncation": true}, &rd)
	// Retention keeps the newest chunks within the cap (a single chunk
	// larger than the cap is kept whole).
	if (len(rd.text()) > 4096 && len(rd.Chunks) > 1) || !strings.HasSuffix(rd.text(), "200\n") {
		t.Fatalf("retained %d bytes ending %q", len(rd.text()), rd.text()[max(0, len(rd.text())-10):])
	}
	if rd.Truncated == nil || !*rd.Truncated || rd.EvictedBytes == nil || *rd.EvictedBytes+len(rd.text()) != 20000 || rd.FirstRetainedSeq == nil || *rd.FirstRetainedSeq != rd.Chunks[0].Seq {
		t.Fatalf("truncation metadata %+v", rd)
	}
	// Without the extension the result has exactly the reference members.
	r := c.call("process/read", map[string]any{"processId": "big"})
	var m map[string]json.RawMessage
	_ = json.Unmarshal(r.Result, &m)
	if len(m) != 7 {
		t.Fatalf("read result members: %s", r.Result)
	}

	t.Run("maxBytes", func(t *testing.T) {
		// Each piece is printed once the one before reached the client, so
		// they are three chunks however late a loaded server reads (50 ms
		// between them let it read "bbbccc" as one chunk: 1 failure in 6
		// loaded suite runs).
		p := startParams("mb", "/bin/sh", "-c", "printf aaa; read x; printf bbb; read x; printf ccc")
		p["pipeStdin"] = true
		c.ok("process/start", p, nil)
		for _, piece := range []string{"aaa", "bbb"} {
			waitOutput(t, c, "mb", piece)
			c.ok("process/write", map[string]any{"processId": "mb", "chunk": base64.StdEncoding.EncodeToString([]byte("\n"))}, nil)
		}
		if _, code := checkEvents(t, c.events("mb", 20*time.Second)); code != 0 {
			t.Fatalf("exit %d", code)
		}
		var rd readRes
		c.ok("process/read", map[string]any{"processId": "mb", "maxBytes": 0}, &rd)
		if len(rd.Chunks) != 1 || rd.NextSeq != rd.Chunks[0].Seq+1 {
			t.Fatalf("maxBytes 0: %+v", rd)
		}
		c.ok("process/read", map[string]any{"processId": "mb", "maxBytes": 6}, &rd)
		if rd.text() != "aaabbb" {
			t.Fatalf("maxBytes 6: %q", rd.text())
		}
	})

	t.Run("long poll does not block control requests", func(t *testing.T) {
		c.ok("process/start", startParams("lp", "/bin/sleep", "1000"), nil)
		readID := c.send("process/read", map[string]any{"processId": "lp", "afterSeq": 0, "waitMs": 5000})
		start := time.Now()
		termID := c.send("process/terminate", map[string]any{"processId": "lp"})
		// The terminate is answered at once; the parked read completes once
		// the kill lands, so the two answers may come in either order.
		got := map[string]response{}
		for len(got) < 2 {
			r := c.next()
			got[string(r.ID)] = r
		}
		if time.Since(start) > 2*time.Second {
			t.Fatalf("terminate waited behind a parked read")
		}
		var term map[string]bool
		if r, ok := got[itoa(termID)]; !ok || json.Unmarshal(r.Result, &term) != nil || !term["running"] {
			t.Fatalf("terminate answer %+v", got)
		}
		var rd readRes
		if r, ok := got[itoa(readID)]; !ok || json.Unmarshal(r.Result, &rd) != nil || !rd.Exited {
			t.Fatalf("parked read answer %+v", got)
		}
		c.events("lp", 10*time.Second)
	})

	t.Run("wait times out empty", func(t *testing.T) {
		c.ok("process/start", startParams("idle", "/bin/sleep", "1000"), nil)
		start := time.Now()
		var rd readRes
		c.ok("process/read", map[string]any{"processId": "idle", "afterSeq": 0, "waitMs": 300}, &rd)
		if el := time.Since(start); el < 250*time.Millisecond || len(rd.Chunks) != 0 || rd.Exited {
			t.Fatalf("timed-out read after %v: %+v", el, rd)
		}
		c.ok("process/terminate", map[string]any{"processId": "idle"}, nil)
		c.events("idle", 10*time.Second)
	})
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestMaxProcesses(t *testing.T) {
	s := startServer(t, "--max-processes", "2")
	c := dial(t, s.URL, nil)
	c.handshake()
	c.ok("process/start", startParams("a", "/bin/sleep", "1000"), nil)
	c.ok("process/start", startParams("b", "/bin/sleep", "1000"), nil)
	c.fail("process/start", startParams("c", "/bin/sleep", "1000"), -32600, "too many processes in this session (limit 2)")
	c.ok("process/terminate", map[string]any{"processId": "a"}, nil)
	c.events("a", 10*time.Second)
	c.ok("process/start", startParams("c", "/bin/true"), nil)
	c.events("c", 10*time.Second)
	c.ok("process/terminate", map[string]any{"processId": "b"}, nil)
	c.events("b", 10*time.Second)
}
