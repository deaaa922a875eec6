package mcp

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// docs/shell-tool.md §3.1: initialize answers the sandbox-state capability, tools, the
// instructions, and the protocol version.
func TestInitializeResult(t *testing.T) {
	t.Parallel()
	s2 := launch(t, opts{})
	id := s2.startRequest("initialize", map[string]any{"protocolVersion": "2025-06-18",
		"capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "e2e", "version": "1"}})
	r, _ := s2.await(id, nil, 30*time.Second)
	var res struct {
		ProtocolVersion string                    `json:"protocolVersion"`
		Capabilities    map[string]map[string]any `json:"capabilities"`
		ServerInfo      map[string]any            `json:"serverInfo"`
		Instructions    string                    `json:"instructions"`
	}
	mustUnmarshal(t, r.Result, &res)
	if res.ProtocolVersion != "2025-06-18" {
		t.Errorf("protocolVersion %q", res.ProtocolVersion)
	}
	if got := mustJSON(t, res.Capabilities["experimental"]); got != `{"codex/sandbox-state":{"version":"1.0.0"}}` {
		t.Errorf("experimental capabilities %s", got)
	}
	if _, ok := res.Capabilities["tools"]; !ok {
		t.Errorf("no tools capability: %s", r.Result)
	}
	if res.Instructions != "This server provides a tool to execute shell commands and return their output." {
		t.Errorf("instructions %q", res.Instructions)
	}
	if res.ServerInfo["name"] == nil || res.ServerInfo["version"] == nil {
		t.Errorf("serverInfo %v", res.ServerInfo)
	}
}

// docs/shell-tool.md §3.1: ping answers {}; an unknown tool is -32602 "tool not found"; an
// unknown method is -32601.
func TestProtocolErrors(t *testing.T) {
	t.Parallel()
	s := start(t, opts{})
	if r := s.request("ping", nil); r.Error != nil || string(r.Result) != "{}" {
		t.Errorf("ping: %s", r.Raw)
	}
	r := s.request("tools/call", map[string]any{"name": "nope", "arguments": map[string]any{}})
	if r.Error == nil || r.Error.Code != -32602 || r.Error.Message != "tool not found" {
		t.Errorf("unknown tool: %s", r.Raw)
	}
	r = s.request("no/such/method", map[string]any{})
	if r.Error == nil || r.Error.Code != -32601 {
		t.Errorf("unknown method: %s", r.Raw)
	}
	if !target.ref && r.Error != nil && !strings.Contains(r.Error.Message, "no/such/method") {
		t.Errorf("ours names the unknown method: %s", r.Raw)
	}
}

// docs/shell-tool.md §3.5: sandbox-state/update without params is -32602.
func TestSandboxStateUpdateErrors(t *testing.T) {
	t.Parallel()
	s := start(t, opts{noUpdate: true})
	r := s.request("codex/sandbox-state/update", nil)
	if r.Error == nil || r.Error.Code != -32602 || r.Error.Message != "missing params for sandbox state request" {
		t.Errorf("no params: %s", r.Raw)
	}
	r = s.request("codex/sandbox-state/update", map[string]any{"sandboxPolicy": map[string]any{"type": "read-only"},
		"sandboxCwd": s.ws, "codexLinuxSandboxExe": 5})
	if r.Error == nil || r.Error.Code != -32602 || r.Error.Message != "failed to deserialize sandbox state" {
		t.Errorf("undecodable params: %s", r.Raw)
	}
}

// docs/shell-tool.md §3.1 (ours): a line that is not JSON is answered with -32700 and the
// server carries on.
func TestParseErrorCarriesOn(t *testing.T) {
	t.Parallel()
	oursOnly(t, "exits on a line that is not JSON-RPC")
	s := start(t, opts{})
	s.sendRaw(`{not json`)
	m := s.next(10 * time.Second)
	if m.Error == nil || m.Error.Code != -32700 {
		t.Errorf("answer to a bad line: %s", m.Raw)
	}
	if out := s.run("echo alive"); out.res.Output != "alive\n" {
		t.Errorf("after the bad line: %+v", out.res)
	}
}

// docs/shell-tool.md §4: Bash's stdin is /dev/null; login defaults to true (bash -lc), and
// login:false runs a non-login shell.
func TestBashStdinAndLogin(t *testing.T) {
	t.Parallel()
	s := start(t, opts{})
	if out := s.run(`readlink /proc/$$/fd/0`); out.res.Output != "/dev/null\n" {
		t.Errorf("Bash's stdin: %q", out.res.Output)
	}
	probe := `shopt -q login_shell && echo login || echo plain`
	if out := s.run(probe); out.res.Output != "plain\n" {
		t.Errorf("login:false: %q", out.res.Output)
	}
	args := map[string]any{"command": probe, "workdir": s.ws}
	if out := s.call(args, nil); !strings.HasSuffix(out.res.Output, "login\n") {
		t.Errorf("login omitted: %q, want a login shell", out.res.Output)
	}
	args["login"] = nil
	if out := s.call(args, nil); !strings.HasSuffix(out.res.Output, "login\n") {
		t.Errorf("login null: %q, want a login shell", out.res.Output)
	}
}

func mustUnmarshal(t *testing.T, raw []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
}
