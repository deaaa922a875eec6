package e2e

import (
	"encoding/json"
	"testing"
	"time"
)

func TestHandshakeAndErrors(t *testing.T) {
	s := startServer(t)
	c := dial(t, s.URL, nil)

	// Malformed input gets id -1 and the connection stays usable.
	for _, bad := range []string{`{not json`, `[1,2]`, `{"id":1.5,"method":"x"}`, `{"id":null,"method":"x"}`, `{"params":{}}`, `"str"`} {
		c.sendRaw(bad)
		r := c.next()
		if string(r.ID) != "-1" {
			t.Fatalf("%s: id %s, want -1", bad, r.ID)
		}
		assertError(t, r, -32600, "failed to parse websocket JSON-RPC message from exec-server websocket *")
	}
	// Params are decoded before the handshake check.
	c.fail("process/read", map[string]any{}, -32602, "missing field `processId`")
	c.fail("process/read", map[string]any{"processId": "p"}, -32600, "client must call initialize before using exec methods")
	c.fail("fs/readFile", map[string]any{"path": "/tmp"}, -32600, "client must call initialize before using filesystem methods")
	c.fail("environment/status", nil, -32600, "client must call initialize before using environment status methods")
	c.fail("nope/method", nil, -32601, "exec-server stub does not implement `nope/method` yet")
	c.fail("initialize", map[string]any{}, -32602, "missing field `clientName`")
	c.fail("initialize", map[string]any{"clientName": "x", "resumeSessionId": "nope"}, -32600, "unknown session id nope")

	// A string id comes back as a string; "jsonrpc" is accepted.
	c.sendRaw(`{"jsonrpc":"2.0","id":"init-1","method":"initialize","params":{"clientName":"e2e","resumeSessionId":null}}`)
	r := c.next()
	if string(r.ID) != `"init-1"` || r.Error != nil {
		t.Fatalf("initialize: id %s error %+v", r.ID, r.Error)
	}
	var res struct {
		SessionID       string         `json:"sessionId"`
		EnvironmentInfo map[string]any `json:"environmentInfo"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil || len(res.SessionID) != 36 {
		t.Fatalf("initialize result %s", r.Result)
	}
	for _, k := range []string{"shell", "executorVersion", "cwd", "userHomeDir", "platformOs", "temporaryDirectories", "tempDir", "capabilities"} {
		if _, ok := res.EnvironmentInfo[k]; !ok {
			t.Errorf("environmentInfo lacks %s: %s", k, r.Result)
		}
	}
	c.fail("process/read", map[string]any{"processId": "p"}, -32600, "client must send initialized before using exec methods")
	c.fail("initialize", map[string]any{"clientName": "x"}, -32600, "initialize may only be sent once per connection")
	c.sendRaw(`{"method":"initialized"}`)
	c.sendRaw(`{"method":"initialized","params":{}}`) // a second one is accepted silently

	var st map[string]string
	c.ok("environment/status", nil, &st)
	if st["status"] != "ready" {
		t.Fatalf("status %v", st)
	}
	c.ok("environment/status", map[string]any{}, nil)
	c.fail("environment/status", map[string]any{"a": 1}, -32602, "invalid type: map, expected unit")
	c.fail("environment/info", []int{1}, -32602, "invalid type: sequence, expected unit")
	var info map[string]any
	c.ok("environment/info", nil, &info)
	if info["platformOs"] != "linux" {
		t.Fatalf("info %v", info)
	}
	// Wrong types and bad values are -32602.
	c.fail("process/start", map[string]any{"processId": 5, "argv": []string{"true"}, "cwd": "/tmp", "env": map[string]string{}, "tty": false}, -32602, "invalid type: *")
	c.fail("process/start", map[string]any{"processId": "p", "argv": []string{}, "cwd": "/tmp", "env": map[string]string{}, "tty": false}, -32602, "argv must not be empty")
	c.fail("process/start", map[string]any{"processId": "p", "argv": []string{"true"}, "cwd": "tmp", "env": map[string]string{}, "tty": false}, -32602, "invalid URI: relative URL without a base")
	c.fail("process/start", map[string]any{"processId": "p", "argv": []string{"true"}, "cwd": "http://x/tmp", "env": map[string]string{}, "tty": false}, -32602, "unsupported path URI scheme `http`")
	c.fail("process/start", map[string]any{"processId": "p", "argv": []string{"true"}, "cwd": "/tmp", "tty": false}, -32602, "missing field `env`")
	c.fail("process/signal", map[string]any{"processId": "p", "signal": "kill"}, -32602, "unknown variant `kill`, expected `interrupt`")
	c.fail("process/write", map[string]any{"processId": "p", "chunk": "!!", "writeId": "1"}, -32602, "*")
	c.fail("process/write", map[string]any{"processId": "p", "chunk": "", "writeId": ""}, -32602, "writeId must not be empty")

	// Any notification but initialized: an id -1 error, then the close.
	c.sendRaw(`{"method":"process/bogus","params":{}}`)
	r = c.next()
	if string(r.ID) != "-1" {
		t.Fatalf("id %s", r.ID)
	}
	assertError(t, r, -32600, "unexpected notification process/bogus")
	select {
	case <-c.closed:
	case <-time.After(10 * time.Second):
		t.Fatal("connection not closed after a stray notification")
	}
}

func TestInitializedBeforeInitializeCloses(t *testing.T) {
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.sendRaw(`{"method":"initialized","params":{}}`)
	select {
	case <-c.closed:
	case <-time.After(10 * time.Second):
		t.Fatal("connection still open")
	}
}

// With --concurrent-requests 1 requests are strictly serial, as in the
// reference: a waiting read holds up the next request.
func TestStrictlySerialMode(t *testing.T) {
	s := startServer(t, "--concurrent-requests", "1")
	c := dial(t, s.URL, nil)
	c.handshake()
	c.ok("process/start", startParams("w", "/bin/sleep", "1000"), nil)
	readID := c.send("process/read", map[string]any{"processId": "w", "waitMs": 300})
	statusID := c.send("environment/status", nil)
	if r := c.next(); string(r.ID) != itoa(readID) {
		t.Fatalf("first answer id %s, want the read (%d)", r.ID, readID)
	}
	if r := c.next(); string(r.ID) != itoa(statusID) {
		t.Fatalf("second answer id %s", r.ID)
	}
	c.ok("process/terminate", map[string]any{"processId": "w"}, nil)
	c.events("w", 10*time.Second)
}
