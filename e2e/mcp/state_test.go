package mcp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeProbe is a command that tries to write in the workspace and in the
// outside folder with Bash builtins only, printing in=N and out=N.
func (s *server) writeProbe(tag string) string {
	return `echo x > ` + s.ws + `/` + tag + `.txt; echo in=$?; echo x > ` + s.outside + `/` + tag + `.txt; echo out=$?`
}

// wrote reports which of the two probe files exist.
func (s *server) wrote(tag string) (in, out bool) {
	_, errIn := os.Stat(filepath.Join(s.ws, tag+".txt"))
	_, errOut := os.Stat(filepath.Join(s.outside, tag+".txt"))
	return errIn == nil, errOut == nil
}

// docs/shell-tool.md §9.13: codex/sandbox-state/update followed at once (without waiting for
// its answer) by tools/call: the call sees the new policy.
func TestUpdateThenCallSeesNewPolicy(t *testing.T) {
	t.Parallel()
	oursOnly(t, "handles the update concurrently with the call")
	s := start(t, opts{})
	steps := []struct {
		policy  map[string]any
		in, out bool
	}{
		{map[string]any{"type": "workspace-write", "writable_roots": []string{}, "network_access": false,
			"exclude_tmpdir_env_var": false, "exclude_slash_tmp": false}, true, false},
		{map[string]any{"type": "read-only"}, false, false},
		{map[string]any{"type": "danger-full-access"}, true, true},
		{map[string]any{"type": "read-only"}, false, false},
	}
	for i, st := range steps {
		tag := "step" + string(rune('0'+i))
		upd := s.startRequest("codex/sandbox-state/update", s.policy(st.policy))
		call := s.startCall(s.shellArgs(s.writeProbe(tag)), nil)
		if r, _ := s.await(upd, nil, 10*time.Second); r.Error != nil {
			t.Fatalf("update: %s", r.Raw)
		}
		out := s.finish(s.await(call, nil, 30*time.Second))
		in, outside := s.wrote(tag)
		if in != st.in || outside != st.out {
			t.Errorf("%s (%v): wrote workspace %v, outside %v; want %v, %v (output %q)",
				tag, st.policy["type"], in, outside, st.in, st.out, out.res.Output)
		}
	}
}

// metaState is params._meta of a tools/call as Codex 0.169.0 sends it
// (docs/shell-tool.md §3.5) for the permission profile p.
func (s *server) metaState(p map[string]any) map[string]any {
	state := map[string]any{
		"permissionProfile":    p,
		"codexLinuxSandboxExe": "/nonexistent/codex-arg0/codex-linux-sandbox",
		"sandboxCwd":           "file://" + s.ws,
		"useLegacyLandlock":    false,
		"useMxc":               false,
	}
	return map[string]any{
		"codex/sandbox-state":      state,
		"codex/sandbox-state-meta": state,
		"codex/sandbox-launcher":   map[string]any{"codexExecutable": "/nonexistent/codex"},
		"callId":                   "call_e2e", "threadId": "thread-e2e", "sessionId": "session-e2e",
		"progressToken": 7,
	}
}

func entry(path any, access string) map[string]any {
	return map[string]any{"path": path, "access": access}
}

func special(kind string) map[string]any {
	return map[string]any{"type": "special", "value": map[string]any{"kind": kind}}
}

// profiles are the three permission profiles Codex 0.169.0 sends, for the
// workspace ws (docs/shell-tool.md §3.5, realclient README).
func profiles(ws string) map[string]map[string]any {
	restricted := func(entries ...map[string]any) map[string]any {
		return map[string]any{"type": "managed", "network": "restricted",
			"file_system": map[string]any{"type": "restricted", "entries": entries}}
	}
	skip := func(p string) map[string]any {
		e := entry(map[string]any{"type": "path", "path": p}, "read")
		e["missing_path_behavior"] = "skip"
		return e
	}
	return map[string]map[string]any{
		"read-only": restricted(entry(special("root"), "read")),
		"workspace-write": restricted(entry(special("root"), "read"),
			entry(map[string]any{"type": "path", "path": ws}, "write"),
			entry(special("slash_tmp"), "write"), entry(special("tmpdir"), "write"),
			skip(ws+"/.git"), skip(ws+"/.agents"), skip(ws+"/.codex")),
		"danger-full-access": {"type": "disabled"},
	}
}

// docs/shell-tool.md §9.16: the per-call _meta sandbox state of Codex 0.169.0 is honoured
// without any update, and wins over the last update.
func TestMetaSandboxState(t *testing.T) {
	t.Parallel()
	oursOnly(t, "ignores _meta")
	s := start(t, opts{state: nil})
	full := s.policy(map[string]any{"type": "danger-full-access"})
	if r := s.request("codex/sandbox-state/update", full); r.Error != nil {
		t.Fatalf("update: %s", r.Raw)
	}
	want := map[string][2]bool{"read-only": {false, false}, "workspace-write": {true, false}, "danger-full-access": {true, true}}
	for mode, p := range profiles(s.ws) {
		tag := strings.ReplaceAll(mode, "-", "_")
		id := s.startCall(s.shellArgs(s.writeProbe(tag)), s.metaState(p))
		out := s.finish(s.await(id, nil, 30*time.Second))
		in, outside := s.wrote(tag)
		if in != want[mode][0] || outside != want[mode][1] {
			t.Errorf("%s: wrote workspace %v, outside %v; want %v (output %q)", mode, in, outside, want[mode], out.res.Output)
		}
	}
}

// docs/shell-tool.md §3.5: with no state at all, a call runs read-only.
func TestDefaultStateReadOnly(t *testing.T) {
	t.Parallel()
	oursOnly(t, "cannot run without a sandbox helper from an update")
	s := start(t, opts{noUpdate: true})
	out := s.run(s.writeProbe("default"))
	if in, outside := s.wrote("default"); in || outside {
		t.Errorf("with no state, wrote workspace %v, outside %v (output %q)", in, outside, out.res.Output)
	}
}
