package shelltool

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/sandbox"
)

// TestParseMetaState: the per-call state of Codex 0.169.0 (docs/shell-tool.md §3.5),
// absent states, and unusable ones (errors, never a silent fallback).
func TestParseMetaState(t *testing.T) {
	real := `{"codex/sandbox-state":{"permissionProfile":{"type":"managed","file_system":{"type":"restricted","entries":[{"path":{"type":"special","value":{"kind":"root"}},"access":"read"},{"path":{"type":"path","path":"/ws"},"access":"write"},{"path":{"type":"special","value":{"kind":"slash_tmp"}},"access":"write"},{"path":{"type":"special","value":{"kind":"tmpdir"}},"access":"write"},{"path":{"type":"path","path":"/ws/.git"},"access":"read","missing_path_behavior":"skip"}]},"network":"restricted"},"codexLinuxSandboxExe":"/usr/lib/codex/codex","sandboxCwd":"file:///ws","useLegacyLandlock":false,"useMxc":false},"codex/sandbox-state-meta":{"sandboxCwd":"file:///ws"},"codex/sandbox-launcher":{"codexExecutable":"/usr/lib/codex/codex"}}`
	st, err := parseMetaState(json.RawMessage(real))
	if err != nil || st == nil {
		t.Fatalf("%v %v", st, err)
	}
	if st.cwd != "/ws" || st.profile.Type != sandbox.ProfileManaged || st.profile.Network != sandbox.NetworkRestricted || len(st.profile.Entries) != 5 {
		t.Errorf("state %+v", st)
	}
	st, err = parseMetaState(json.RawMessage(`{"codex/sandbox-state":{"permissionProfile":{"type":"disabled"},"sandboxCwd":"/ws"}}`))
	if err != nil || st.profile.Type != sandbox.ProfileDisabled || st.cwd != "/ws" {
		t.Errorf("disabled: %+v %v", st, err)
	}
	st, err = parseMetaState(json.RawMessage(`{"codex/sandbox-state":{"sandboxPolicy":{"type":"workspace-write","writable_roots":["/x"]},"sandboxCwd":"/ws"}}`))
	if err != nil || st.profile.Type != sandbox.ProfileManaged {
		t.Errorf("legacy policy in _meta: %+v %v", st, err)
	}
	for _, absent := range []string{``, `null`, `{}`, `{"progressToken":1}`, `{"codex/sandbox-state":null}`} {
		if st, err := parseMetaState(json.RawMessage(absent)); st != nil || err != nil {
			t.Errorf("%q: %+v %v, want no state", absent, st, err)
		}
	}
	for _, bad := range []string{
		`[]`,
		`{"codex/sandbox-state":{"sandboxCwd":"/ws"}}`,
		`{"codex/sandbox-state":{"permissionProfile":{"type":"disabled"}}}`,
		`{"codex/sandbox-state":{"permissionProfile":{"type":"disabled"},"sandboxCwd":"rel"}}`,
		`{"codex/sandbox-state":{"permissionProfile":{"type":"disabled"},"sandboxCwd":"/ws","useLegacyLandlock":"yes"}}`,
		`{"codex/sandbox-state":{"permissionProfile":{"type":"managed","file_system":{"type":"odd"}},"sandboxCwd":"/ws"}}`,
	} {
		_, err := parseMetaState(json.RawMessage(bad))
		if !errors.Is(err, rpc.ErrInvalidParams) || !strings.HasPrefix(err.Error(), "failed to deserialize codex/sandbox-state: ") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// TestParseUpdate: the legacy and v2 spellings, and the exact errors.
func TestParseUpdate(t *testing.T) {
	for _, ok := range []string{
		`{"sandboxPolicy":{"type":"read-only"},"sandboxCwd":"/ws"}`,
		`{"sandboxPolicy":{"type":"workspaceWrite","writableRoots":["/x"],"networkAccess":true},"sandboxCwd":"/ws","codexLinuxSandboxExe":"/c","useLinuxSandboxBwrap":true}`,
		`{"sandboxPolicy":{"type":"danger-full-access"},"sandboxCwd":"file:///ws","codexLinuxSandboxExe":null}`,
		`{"sandboxPolicy":{"type":"external-sandbox","network_access":"enabled"},"sandboxCwd":"/ws"}`,
	} {
		if st, err := parseUpdate(json.RawMessage(ok)); err != nil || st.cwd != "/ws" {
			t.Errorf("%s: %+v %v", ok, st, err)
		}
	}
	for _, bad := range []string{
		`{"sandboxPolicy":{"type":"read-only"}}`,
		`{"sandboxCwd":"/ws"}`,
		`{"sandboxPolicy":{"type":"bogus"},"sandboxCwd":"/ws"}`,
		`{"sandboxPolicy":{"type":"read-only"},"sandboxCwd":"/ws","useLinuxSandboxBwrap":"no"}`,
		`[1]`,
	} {
		_, err := parseUpdate(json.RawMessage(bad))
		var we *rpc.Error
		if !errors.As(err, &we) || we.Code != rpc.CodeInvalidParams || we.Message != "failed to deserialize sandbox state" || string(we.Data) != bad {
			t.Errorf("%s: %v", bad, err)
		}
	}
	for _, missing := range []string{``, `null`} {
		if _, err := parseUpdate(json.RawMessage(missing)); err == nil || err.Error() != "missing params for sandbox state request" {
			t.Errorf("%q: %v", missing, err)
		}
	}
}
