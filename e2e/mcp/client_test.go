package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// msg is one JSON-RPC message read from the server, with its exact bytes.
type msg struct {
	Raw     []byte          `json:"-"`
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *rpcError       `json:"error"`
}

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

func (m msg) isRequest() bool { return m.Method != "" && len(m.ID) > 0 }

// shellResult is the JSON object in the text of a shell call's result.
type shellResult struct {
	ExitCode int    `json:"exit_code"`
	Output   string `json:"output"`
	Duration struct {
		Secs  uint64 `json:"secs"`
		Nanos uint32 `json:"nanos"`
	} `json:"duration"`
	TimedOut bool `json:"timed_out"`
}

// callOut is what one tools/call produced.
type callOut struct {
	resp    msg
	text    string // the text of the single content item ("" if none)
	res     shellResult
	elicits []msg // elicitation/create requests received during the call
}

// answerFunc returns the result object to answer an elicitation with, or a
// whole raw line when it starts with `{"jsonrpc"`.
type answerFunc func(m msg) string

func answer(action string) answerFunc {
	return func(msg) string {
		if action == "accept" {
			return `{"action":"accept","content":{}}`
		}
		return `{"action":"` + action + `"}`
	}
}

// sendRaw writes one line to the server's stdin.
func (s *server) sendRaw(line string) {
	s.t.Helper()
	if _, err := s.stdin.Write([]byte(line + "\n")); err != nil {
		s.t.Fatalf("writing to the server: %v", err)
	}
}

func (s *server) send(v any) {
	s.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		s.t.Fatal(err)
	}
	s.sendRaw(string(b))
}

// next reads the next message, failing the test on a timeout, on EOF, and
// on a line that is not a JSON-RPC 2.0 object (every message must carry
// "jsonrpc":"2.0", docs/shell-tool.md §3.1).
func (s *server) next(timeout time.Duration) msg {
	s.t.Helper()
	select {
	case line, ok := <-s.lines:
		if !ok {
			s.t.Fatalf("server closed stdout (exited)")
		}
		var m msg
		if err := json.Unmarshal(line, &m); err != nil || m.JSONRPC != "2.0" {
			s.t.Fatalf("not a JSON-RPC 2.0 message: %q (%v)", line, err)
		}
		m.Raw = line
		return m
	case <-time.After(timeout):
		s.t.Fatalf("no message from the server within %v", timeout)
	}
	return msg{}
}

// start a request; returns its id (as JSON).
func (s *server) startRequest(method string, params any) string {
	s.t.Helper()
	s.nextID++
	id := s.nextID
	req := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
	if params != nil {
		req["params"] = params
	}
	s.send(req)
	return fmt.Sprint(id)
}

// await reads until the response to id, answering elicitations with ans
// (nil: an elicitation fails the test and is declined) and ignoring
// notifications and responses to other ids.
func (s *server) await(id string, ans answerFunc, timeout time.Duration) (msg, []msg) {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	var elicits []msg
	for {
		m := s.next(time.Until(deadline))
		switch {
		case m.isRequest() && m.Method == "elicitation/create":
			elicits = append(elicits, m)
			reply := `{"action":"decline"}`
			if ans == nil {
				s.t.Errorf("unexpected elicitation: %s", m.Raw)
			} else {
				reply = ans(m)
			}
			if !strings.HasPrefix(reply, `{"jsonrpc"`) {
				reply = `{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":` + reply + `}`
			}
			s.sendRaw(reply)
		case m.isRequest():
			s.t.Errorf("unexpected request from the server: %s", m.Raw)
		case m.Method == "" && string(m.ID) == id:
			return m, elicits
		}
	}
}

// request sends a request and returns its response.
func (s *server) request(method string, params any) msg {
	s.t.Helper()
	m, _ := s.await(s.startRequest(method, params), nil, 30*time.Second)
	return m
}

func (s *server) handshake(o opts) {
	s.t.Helper()
	caps := o.clientCaps
	if caps == nil {
		caps = map[string]any{"elicitation": map[string]any{"form": map[string]any{}, "url": map[string]any{}}}
	}
	r := s.request("initialize", map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": caps,
		"clientInfo": map[string]any{"name": "e2e-mcp", "version": "1.0.0"},
	})
	if r.Error != nil {
		s.t.Fatalf("initialize: %s", r.Raw)
	}
	s.sendRaw(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if o.noUpdate {
		return
	}
	st := o.state
	if st == nil {
		st = s.policy(map[string]any{"type": "read-only"})
	}
	if r := s.request("codex/sandbox-state/update", st); r.Error != nil || string(r.Result) != "{}" {
		s.t.Fatalf("codex/sandbox-state/update: %s", r.Raw)
	}
}

// policy builds sandbox-state/update params with the workspace as sandboxCwd.
func (s *server) policy(p map[string]any) map[string]any {
	var exe any
	if target.sandboxExe != "" {
		exe = target.sandboxExe
	}
	return map[string]any{"sandboxPolicy": p, "sandboxCwd": s.ws, "codexLinuxSandboxExe": exe, "useLinuxSandboxBwrap": false}
}

// shellArgs are the arguments of a non-login call in the workspace.
func (s *server) shellArgs(command string) map[string]any {
	return map[string]any{"command": command, "workdir": s.ws, "login": false}
}

// startCall sends tools/call shell with args (and _meta when meta is not nil).
func (s *server) startCall(args map[string]any, meta map[string]any) string {
	s.t.Helper()
	p := map[string]any{"name": "shell", "arguments": args}
	if meta != nil {
		p["_meta"] = meta
	}
	return s.startRequest("tools/call", p)
}

// call runs one shell call to completion and decodes its result; a JSON-RPC
// error or a malformed result fails the test.
func (s *server) call(args map[string]any, ans answerFunc) callOut {
	s.t.Helper()
	return s.finish(s.await(s.startCall(args, nil), ans, 60*time.Second))
}

// run is call with the non-login arguments for command.
func (s *server) run(command string) callOut {
	s.t.Helper()
	return s.call(s.shellArgs(command), nil)
}

func (s *server) finish(m msg, elicits []msg) callOut {
	s.t.Helper()
	out := callOut{resp: m, elicits: elicits}
	if m.Error != nil {
		s.t.Fatalf("tools/call answered with an error: %s", m.Raw)
	}
	var r struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError *bool `json:"isError"`
	}
	if err := json.Unmarshal(m.Result, &r); err != nil || len(r.Content) != 1 || r.Content[0].Type != "text" {
		s.t.Fatalf("tools/call result is not one text item: %s", m.Raw)
	}
	out.text = r.Content[0].Text
	dec := json.NewDecoder(bytes.NewReader([]byte(out.text)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out.res); err != nil {
		s.t.Fatalf("result text is not the shell result object: %v: %s", err, out.text)
	}
	if r.IsError == nil || *r.IsError {
		s.t.Errorf("isError = %v, want false: %s", r.IsError, m.Raw)
	}
	return out
}
