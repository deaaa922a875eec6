package sandbox_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/sandbox"
)

// clientWorkspaceWrite is exactly what the 0.169.0 client sends in
// `--sandbox workspace-write` mode (docs/protocol.md §8.1).
const clientWorkspaceWrite = `{"permissions":{
   "type":"managed",
   "file_system":{"type":"restricted","entries":[
     {"path":{"type":"special","value":{"kind":"root"}},"access":"read"},
     {"path":{"type":"special","value":{"kind":"project_roots"}},"access":"write"},
     {"path":{"type":"special","value":{"kind":"slash_tmp"}},"access":"write"},
     {"path":{"type":"special","value":{"kind":"tmpdir"}},"access":"write"},
     {"path":{"type":"special","value":{"kind":"project_roots","subpath":".git"}},"access":"read","missing_path_behavior":"skip"},
     {"path":{"type":"special","value":{"kind":"project_roots","subpath":".agents"}},"access":"read","missing_path_behavior":"skip"},
     {"path":{"type":"special","value":{"kind":"project_roots","subpath":".codex"}},"access":"read","missing_path_behavior":"skip"},
     {"path":{"type":"special","value":{"kind":"project_roots","subpath":".aws"}},"access":"read","missing_path_behavior":"skip"}]},
   "network":"restricted"},
 "cwd":"file:///home/dev/proj",
 "workspaceRoots":["file:///home/dev/proj"],
 "windowsSandboxLevel":"disabled",
 "windowsSandboxProxySettingsMode":"reconcile",
 "useLegacyLandlock":false}`

// clientProfile is the profile of clientWorkspaceWrite.
func clientProfile() sandbox.Profile {
	return sandbox.Managed(sandbox.NetworkRestricted,
		sandbox.SpecialEntry(sandbox.SpecialRoot, sandbox.AccessRead),
		sandbox.ProjectRootsEntry("", sandbox.AccessWrite),
		sandbox.SpecialEntry(sandbox.SpecialSlashTmp, sandbox.AccessWrite),
		sandbox.SpecialEntry(sandbox.SpecialTmpdir, sandbox.AccessWrite),
		skipEntry(sandbox.ProjectRootsEntry(".git", sandbox.AccessRead)),
		skipEntry(sandbox.ProjectRootsEntry(".agents", sandbox.AccessRead)),
		skipEntry(sandbox.ProjectRootsEntry(".codex", sandbox.AccessRead)),
		skipEntry(sandbox.ProjectRootsEntry(".aws", sandbox.AccessRead)),
	)
}

func TestParseSandboxClientObject(t *testing.T) {
	t.Parallel()
	got, err := sandbox.ParseSandbox(json.RawMessage(clientWorkspaceWrite))
	if err != nil {
		t.Fatalf("ParseSandbox: %v", err)
	}
	want := &sandbox.Sandbox{
		Permissions:    clientProfile(),
		Cwd:            "/home/dev/proj",
		WorkspaceRoots: []string{"/home/dev/proj"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	// The workspace-write constructor is what the client sends, minus the
	// .aws entry the client adds on its own.
	ww := sandbox.WorkspaceWrite(nil, false, false, false)
	if n := len(ww.Entries); !reflect.DeepEqual(ww.Entries, got.Permissions.Entries[:n]) {
		t.Fatalf("WorkspaceWrite entries %+v differ from the client's", ww.Entries)
	}
}

func TestParseSandboxFSVariant(t *testing.T) {
	t.Parallel()
	in := `{"permissions":{"type":"managed","file_system":{"type":"restricted","entries":[]},"network":"restricted"},
	 "cwd":"file:///srv/a","workspaceRoots":["/srv/a","file:///srv/b"],
	 "policyContext":{"cwd":"file:///srv/p","workspaceRoots":["file:///srv/p"]},
	 "userHomeDir":"file:///home/u","windowsSandboxLevel":"restricted-token","windowsSandboxPrivateDesktop":true}`
	got, err := sandbox.ParseSandbox(json.RawMessage(in))
	if err != nil {
		t.Fatal(err)
	}
	want := &sandbox.Sandbox{
		Permissions:    sandbox.Managed(sandbox.NetworkRestricted),
		Cwd:            "/srv/a",
		WorkspaceRoots: []string{"/srv/a", "/srv/b"},
		PolicyContext:  &sandbox.PolicyContext{Cwd: "/srv/p", WorkspaceRoots: []string{"/srv/p"}},
		UserHomeDir:    "/home/u",
	}
	want.Permissions.Entries = nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	// Marshal and parse back.
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	again, err := sandbox.ParseSandbox(b)
	if err != nil || !reflect.DeepEqual(again, got) {
		t.Fatalf("round trip %s: %+v, %v", b, again, err)
	}
}

func TestParseSandboxNullAndDefaults(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"", "null", " null "} {
		got, err := sandbox.ParseSandbox(json.RawMessage(in))
		if got != nil || err != nil {
			t.Errorf("ParseSandbox(%q) = %+v, %v; want nil, nil", in, got, err)
		}
	}
	got, err := sandbox.ParseSandbox(json.RawMessage(`{"cwd":"/w"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !got.Permissions.Restricted() || len(got.Permissions.Entries) != 0 || got.Permissions.FullNetwork() {
		t.Fatalf("missing permissions must be the deny-all default, got %+v", got.Permissions)
	}
}

func TestParseSandboxErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		msg  string
		code int
	}{
		{`{"cwd":"rel/dir"}`, "invalid URI: relative URL without a base", rpc.CodeInvalidParams},
		{`{"workspaceRoots":["file://host/x"]}`, "'file://host/x' is invalid on 'linux'", rpc.CodeInvalidRequest},
		{`{"permissions":{"type":"bogus"}}`, "unknown permission profile type `bogus`", 0},
		{`{"policyContext":{"cwd":"ftp://x/y"}}`, "unsupported path URI scheme `ftp`", rpc.CodeInvalidParams},
		{`"text"`, "invalid sandbox: expected an object", 0},
	}
	for _, tt := range tests {
		_, err := sandbox.ParseSandbox(json.RawMessage(tt.in))
		if err == nil || err.Error() != tt.msg || !errors.Is(err, sandbox.ErrInvalidPolicy) {
			t.Errorf("ParseSandbox(%s) error %v, want %q wrapping ErrInvalidPolicy", tt.in, err, tt.msg)
			continue
		}
		if tt.code != 0 && rpc.ToWire(err).Code != tt.code {
			t.Errorf("ParseSandbox(%s) wire code %d, want %d", tt.in, rpc.ToWire(err).Code, tt.code)
		}
	}
}

func TestSandboxUnmarshalJSON(t *testing.T) {
	t.Parallel()
	var params struct {
		Sandbox *sandbox.Sandbox `json:"sandbox"`
	}
	if err := json.Unmarshal([]byte(`{"sandbox":`+clientWorkspaceWrite+`}`), &params); err != nil {
		t.Fatal(err)
	}
	if params.Sandbox == nil || params.Sandbox.Cwd != "/home/dev/proj" {
		t.Fatalf("got %+v", params.Sandbox)
	}
	params.Sandbox = nil
	if err := json.Unmarshal([]byte(`{"sandbox":null}`), &params); err != nil || params.Sandbox != nil {
		t.Fatalf("null sandbox: %+v, %v", params.Sandbox, err)
	}
	err := json.Unmarshal([]byte(`{"sandbox":{"permissions":{"type":"managed","file_system":{"type":"restricted","entries":[
		{"path":{"type":"glob_pattern","pattern":"x"},"access":"read"}]}}}}`), &params)
	if !errors.Is(err, sandbox.ErrInvalidPolicy) {
		t.Fatalf("error %v, want ErrInvalidPolicy through json.Unmarshal", err)
	}
}
