package sandbox_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"go.uber.org/goleak"

	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/sandbox"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// intp returns a pointer to n.
func intp(n int) *int { return &n }

// skipEntry marks an entry missing_path_behavior "skip".
func skipEntry(e sandbox.Entry) sandbox.Entry {
	e.MissingPathBehavior = sandbox.MissingSkip
	return e
}

func TestParseProfile(t *testing.T) {
	t.Parallel()
	restricted := func(network sandbox.Network, entries ...sandbox.Entry) sandbox.Profile {
		return sandbox.Profile{Type: sandbox.ProfileManaged, FileSystem: sandbox.FileSystemRestricted, Entries: entries, Network: network}
	}
	full := restricted(sandbox.NetworkRestricted,
		sandbox.SpecialEntry(sandbox.SpecialRoot, sandbox.AccessRead),
		sandbox.ProjectRootsEntry("", sandbox.AccessWrite),
		skipEntry(sandbox.ProjectRootsEntry(".git", sandbox.AccessRead)),
		sandbox.PathEntry("/home/dev/.ssh", sandbox.AccessDeny),
		sandbox.GlobDenyEntry("**/*.env"),
	)
	full.GlobScanMaxDepth = intp(4)
	tests := []struct {
		name string
		in   string
		want sandbox.Profile
	}{
		{"spec managed restricted", `{"type":"managed",
 "file_system":{"type":"restricted",
   "entries":[
     {"path":{"type":"special","value":{"kind":"root"}},"access":"read"},
     {"path":{"type":"special","value":{"kind":"project_roots"}},"access":"write"},
     {"path":{"type":"special","value":{"kind":"project_roots","subpath":".git"}},"access":"read","missing_path_behavior":"skip"},
     {"path":{"type":"path","path":"file:///home/dev/.ssh"},"access":"deny"},
     {"path":{"type":"glob_pattern","pattern":"**/*.env"},"access":"deny"}],
   "glob_scan_max_depth":4},
 "network":"restricted"}`, full},
		{"spec managed unrestricted", `{"type":"managed","file_system":{"type":"unrestricted"},"network":"restricted"}`,
			sandbox.Profile{Type: sandbox.ProfileManaged, FileSystem: sandbox.FileSystemUnrestricted, Network: sandbox.NetworkRestricted}},
		{"spec disabled", `{"type":"disabled"}`, sandbox.Profile{Type: sandbox.ProfileDisabled, Network: sandbox.NetworkEnabled}},
		{"spec external", `{"type":"external","network":"enabled"}`, sandbox.Profile{Type: sandbox.ProfileExternal, Network: sandbox.NetworkEnabled}},
		{"external default network", `{"type":"external"}`, sandbox.Profile{Type: sandbox.ProfileExternal, Network: sandbox.NetworkRestricted}},
		{"managed no entries", `{"type":"managed","file_system":{"type":"restricted","entries":[]},"network":"restricted"}`,
			restricted(sandbox.NetworkRestricted)},
		{"managed without file_system", `{"type":"managed"}`, restricted(sandbox.NetworkRestricted)},
		{"plain absolute path", `{"type":"managed","file_system":{"type":"restricted","entries":[
			{"path":{"type":"path","path":"/opt/x/../y"},"access":"write"}]},"network":"enabled"}`,
			restricted(sandbox.NetworkEnabled, sandbox.PathEntry("/opt/y", sandbox.AccessWrite))},
		{"percent-decoded uri", `{"type":"managed","file_system":{"type":"restricted","entries":[
			{"path":{"type":"path","path":"file:///tmp/with%20space"},"access":"read"}]}}`,
			restricted(sandbox.NetworkRestricted, sandbox.PathEntry("/tmp/with space", sandbox.AccessRead))},
		{"none alias", `{"type":"managed","file_system":{"type":"restricted","entries":[
			{"path":{"type":"path","path":"/secret"},"access":"none"}]}}`,
			restricted(sandbox.NetworkRestricted, sandbox.PathEntry("/secret", sandbox.AccessDeny))},
		{"cwd alias and specials", `{"type":"managed","file_system":{"type":"restricted","entries":[
			{"path":{"type":"special","value":{"kind":"current_working_directory"}},"access":"write"},
			{"path":{"type":"special","value":{"kind":"minimal"}},"access":"read"},
			{"path":{"type":"special","value":{"kind":"tmpdir"}},"access":"write"},
			{"path":{"type":"special","value":{"kind":"slash_tmp"}},"access":"write"}]}}`,
			restricted(sandbox.NetworkRestricted,
				sandbox.ProjectRootsEntry("", sandbox.AccessWrite),
				sandbox.SpecialEntry(sandbox.SpecialMinimal, sandbox.AccessRead),
				sandbox.SpecialEntry(sandbox.SpecialTmpdir, sandbox.AccessWrite),
				sandbox.SpecialEntry(sandbox.SpecialSlashTmp, sandbox.AccessWrite))},
		{"unknown special kinds kept, unknown fields ignored", `{"type":"managed","future":1,"file_system":{"type":"restricted","x":[],"entries":[
			{"path":{"type":"special","value":{"kind":"unknown","path":":future_token","subpath":"a"}},"access":"write","extra":true},
			{"path":{"type":"special","value":{"kind":"brand_new_kind"}},"access":"deny"}]}}`,
			restricted(sandbox.NetworkRestricted,
				sandbox.Entry{Path: sandbox.EntryPath{Type: sandbox.PathSpecial, Kind: sandbox.SpecialUnknown, Token: ":future_token", Subpath: "a"}, Access: sandbox.AccessWrite},
				sandbox.Entry{Path: sandbox.EntryPath{Type: sandbox.PathSpecial, Kind: "brand_new_kind"}, Access: sandbox.AccessDeny})},
		{"unknown path form granting access is dropped", `{"type":"managed","file_system":{"type":"restricted","entries":[
			{"path":{"type":"future_form","x":1},"access":"read"}]}}`, restricted(sandbox.NetworkRestricted)},
		{"legacy read/write lists", `{"network":{"enabled":true},"file_system":{"read":["/a"],"write":["/b"]}}`,
			restricted(sandbox.NetworkEnabled, sandbox.PathEntry("/a", sandbox.AccessRead), sandbox.PathEntry("/b", sandbox.AccessWrite))},
		{"legacy entries", `{"file_system":{"entries":[{"path":{"type":"special","value":{"kind":"root"}},"access":"read"}],"glob_scan_max_depth":2}}`,
			func() sandbox.Profile {
				p := restricted(sandbox.NetworkRestricted, sandbox.SpecialEntry(sandbox.SpecialRoot, sandbox.AccessRead))
				p.GlobScanMaxDepth = intp(2)
				return p
			}()},
		{"standalone kind tag", `{"type":"managed","file_system":{"kind":"external-sandbox"},"network":"enabled"}`,
			sandbox.Profile{Type: sandbox.ProfileExternal, Network: sandbox.NetworkEnabled}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := sandbox.ParseProfile(json.RawMessage(tt.in))
			if err != nil {
				t.Fatalf("ParseProfile: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
			// The canonical form parses back to the same profile.
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			again, err := sandbox.ParseProfile(b)
			if err != nil {
				t.Fatalf("reparse %s: %v", b, err)
			}
			if !reflect.DeepEqual(again, got) {
				t.Fatalf("round trip %s\ngot  %+v\nwant %+v", b, again, got)
			}
		})
	}
}

func TestParseProfileErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, msg string
		code          int // wire code carried by a path error; 0 for none
	}{
		{"glob read", `{"type":"managed","file_system":{"type":"restricted","entries":[
			{"path":{"type":"glob_pattern","pattern":"**/*.env"},"access":"read"}]}}`,
			"glob file system permissions only support deny-read entries", 0},
		{"glob write", `{"type":"managed","file_system":{"type":"restricted","entries":[
			{"path":{"type":"glob_pattern","pattern":"*.log"},"access":"write"}]}}`,
			"glob file system permissions only support deny-read entries", 0},
		{"relative path", `{"type":"managed","file_system":{"type":"restricted","entries":[
			{"path":{"type":"path","path":"tmp/x"},"access":"read"}]}}`,
			"invalid URI: relative URL without a base", rpc.CodeInvalidParams},
		{"foreign scheme", `{"type":"managed","file_system":{"type":"restricted","entries":[
			{"path":{"type":"path","path":"http://x/y"},"access":"read"}]}}`,
			"unsupported path URI scheme `http`", rpc.CodeInvalidParams},
		{"foreign host", `{"type":"managed","file_system":{"type":"restricted","entries":[
			{"path":{"type":"path","path":"file://server/share/a.txt"},"access":"read"}]}}`,
			"'file://server/share/a.txt' is invalid on 'linux'", rpc.CodeInvalidRequest},
		{"unknown access", `{"type":"managed","file_system":{"type":"restricted","entries":[
			{"path":{"type":"special","value":{"kind":"root"}},"access":"execute"}]}}`,
			"unknown file system access `execute`", 0},
		{"unknown deny form", `{"type":"managed","file_system":{"type":"restricted","entries":[
			{"path":{"type":"future_form"},"access":"deny"}]}}`,
			"unsupported file system path type `future_form` in a deny entry", 0},
		{"unknown profile type", `{"type":"sometimes"}`, "unknown permission profile type `sometimes`", 0},
		{"unknown network", `{"type":"managed","network":"partial"}`, "unknown network policy `partial`", 0},
		{"not an object", `[1]`, "invalid permission profile: expected an object", 0},
		{"negative depth", `{"type":"managed","file_system":{"type":"restricted","glob_scan_max_depth":-1}}`,
			"invalid glob_scan_max_depth: -1", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := sandbox.ParseProfile(json.RawMessage(tt.in))
			if err == nil {
				t.Fatal("ParseProfile succeeded")
			}
			if err.Error() != tt.msg {
				t.Fatalf("error %q, want %q", err, tt.msg)
			}
			if !errors.Is(err, sandbox.ErrInvalidPolicy) {
				t.Fatalf("error %v does not wrap ErrInvalidPolicy", err)
			}
			if tt.code != 0 && rpc.ToWire(err).Code != tt.code {
				t.Fatalf("wire code %d, want %d", rpc.ToWire(err).Code, tt.code)
			}
		})
	}
}

func TestProfileMarshalCanonical(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   sandbox.Profile
		want string
	}{
		{"zero value is the default profile", sandbox.Profile{},
			`{"type":"managed","file_system":{"type":"restricted"},"network":"restricted"}`},
		{"disabled", sandbox.Profile{Type: sandbox.ProfileDisabled}, `{"type":"disabled"}`},
		{"external", sandbox.ExternalSandbox(true), `{"type":"external","network":"enabled"}`},
		{"danger", sandbox.DangerFullAccess(),
			`{"type":"managed","file_system":{"type":"unrestricted"},"network":"enabled"}`},
		{"entries", sandbox.Managed(sandbox.NetworkRestricted,
			sandbox.PathEntry("/tmp/with space", sandbox.AccessDeny),
			sandbox.GlobDenyEntry("~/private/*.env"),
			skipEntry(sandbox.ProjectRootsEntry(".aws", sandbox.AccessRead))),
			`{"type":"managed","file_system":{"type":"restricted","entries":[` +
				`{"path":{"type":"path","path":"file:///tmp/with%20space"},"access":"deny"},` +
				`{"path":{"type":"glob_pattern","pattern":"~/private/*.env"},"access":"deny"},` +
				`{"path":{"type":"special","value":{"kind":"project_roots","subpath":".aws"}},"access":"read","missing_path_behavior":"skip"}` +
				`]},"network":"restricted"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := json.Marshal(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Fatalf("got  %s\nwant %s", b, tt.want)
			}
		})
	}
}

func TestNamedProfile(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]sandbox.Profile{
		":read-only":         sandbox.ReadOnly(false),
		":workspace":         sandbox.WorkspaceWrite(nil, false, false, false),
		":danger-no-sandbox": sandbox.DangerFullAccess(),
	} {
		got, err := sandbox.NamedProfile(name)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("NamedProfile(%q) = %+v, %v; want %+v", name, got, err, want)
		}
	}
	if _, err := sandbox.NamedProfile(":mine"); !errors.Is(err, sandbox.ErrInvalidPolicy) {
		t.Errorf("NamedProfile(:mine) error %v, want ErrInvalidPolicy", err)
	}
}
