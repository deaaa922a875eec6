package sandbox_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/codexec/codex/sandbox"
)

func TestParsePolicy(t *testing.T) {
	t.Parallel()
	ws := func(roots []string, network, exTmpdir, exSlash bool) sandbox.Policy {
		return sandbox.Policy{Mode: sandbox.PolicyWorkspaceWrite, WritableRoots: roots, NetworkAccess: network,
			ExcludeTmpdirEnvVar: exTmpdir, ExcludeSlashTmp: exSlash}
	}
	tests := []struct {
		in   string
		want sandbox.Policy
	}{
		// Core spelling (docs/sandbox.md §2.2), verbatim.
		{`{"type":"danger-full-access"}`, sandbox.Policy{Mode: sandbox.PolicyDangerFullAccess}},
		{`{"type":"read-only"}`, sandbox.Policy{Mode: sandbox.PolicyReadOnly}},
		{`{"type":"read-only","network_access":true}`, sandbox.Policy{Mode: sandbox.PolicyReadOnly, NetworkAccess: true}},
		{`{"type":"workspace-write","writable_roots":["/opt/cache"],"network_access":false,"exclude_tmpdir_env_var":false,"exclude_slash_tmp":false}`,
			ws([]string{"/opt/cache"}, false, false, false)},
		{`{"type":"external-sandbox","network_access":"enabled"}`, sandbox.Policy{Mode: sandbox.PolicyExternalSandbox, NetworkAccess: true}},
		{`{"type":"external-sandbox"}`, sandbox.Policy{Mode: sandbox.PolicyExternalSandbox}},
		// App-server v2 spelling (docs/sandbox.md §2.3), verbatim.
		{`{"type":"dangerFullAccess"}`, sandbox.Policy{Mode: sandbox.PolicyDangerFullAccess}},
		{`{"type":"readOnly","networkAccess":false}`, sandbox.Policy{Mode: sandbox.PolicyReadOnly}},
		{`{"type":"workspaceWrite","writableRoots":["/abs/dir"],"networkAccess":false,"excludeTmpdirEnvVar":false,"excludeSlashTmp":false}`,
			ws([]string{"/abs/dir"}, false, false, false)},
		{`{"type":"externalSandbox","networkAccess":"restricted"}`, sandbox.Policy{Mode: sandbox.PolicyExternalSandbox}},
		// Defaults and the accepted fullAccess forms.
		{`{"type":"workspaceWrite"}`, ws(nil, false, false, false)},
		{`{"type":"workspaceWrite","networkAccess":true,"excludeTmpdirEnvVar":true,"excludeSlashTmp":true,"readOnlyAccess":{"type":"fullAccess"}}`,
			ws(nil, true, true, true)},
		{`{"type":"readOnly","access":{"type":"fullAccess"},"networkAccess":true}`, sandbox.Policy{Mode: sandbox.PolicyReadOnly, NetworkAccess: true}},
		{`{"type":"workspace-write","writable_roots":["file:///opt/with%20space"]}`, ws([]string{"/opt/with space"}, false, false, false)},
	}
	for _, tt := range tests {
		got, err := sandbox.ParsePolicy(json.RawMessage(tt.in))
		if err != nil {
			t.Errorf("ParsePolicy(%s): %v", tt.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParsePolicy(%s)\ngot  %+v\nwant %+v", tt.in, got, tt.want)
		}
	}
}

func TestParsePolicyErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, msg string }{
		{`{"type":"readOnly","access":{"type":"restricted","includePlatformDefaults":true,"readableRoots":[]}}`,
			"readOnly.access is no longer supported; use permissionProfile for restricted reads"},
		{`{"type":"workspaceWrite","readOnlyAccess":{"type":"restricted","readableRoots":["/x"]}}`,
			"workspaceWrite.readOnlyAccess is no longer supported; use permissionProfile for restricted reads"},
		{`{"type":"read-only","access":{"type":"restricted"}}`,
			"readOnly.access is no longer supported; use permissionProfile for restricted reads"},
		{`{"type":"workspace-write","read_only_access":{"type":"restricted"}}`,
			"workspaceWrite.readOnlyAccess is no longer supported; use permissionProfile for restricted reads"},
		{`{"type":"fullAccess"}`, "unknown sandbox policy type `fullAccess`"},
		{`{}`, "unknown sandbox policy type ``"},
		{`{"type":"workspace-write","writable_roots":["relative"]}`, "invalid URI: relative URL without a base"},
		{`{"type":"external-sandbox","network_access":"sometimes"}`, "unknown network policy `sometimes`"},
	}
	for _, tt := range tests {
		_, err := sandbox.ParsePolicy(json.RawMessage(tt.in))
		if err == nil || err.Error() != tt.msg || !errors.Is(err, sandbox.ErrInvalidPolicy) {
			t.Errorf("ParsePolicy(%s) error %v, want %q wrapping ErrInvalidPolicy", tt.in, err, tt.msg)
		}
	}
}

// TestLegacyConversion is checklist item 27: every legacy policy converts
// as in docs/sandbox.md §3.6, and back where the mapping is exact.
func TestLegacyConversion(t *testing.T) {
	t.Parallel()
	rootRead := sandbox.SpecialEntry(sandbox.SpecialRoot, sandbox.AccessRead)
	meta := []sandbox.Entry{
		skipEntry(sandbox.ProjectRootsEntry(".git", sandbox.AccessRead)),
		skipEntry(sandbox.ProjectRootsEntry(".agents", sandbox.AccessRead)),
		skipEntry(sandbox.ProjectRootsEntry(".codex", sandbox.AccessRead)),
	}
	withMeta := func(es ...sandbox.Entry) []sandbox.Entry { return append(es, meta...) }
	tests := []struct {
		name   string
		policy sandbox.Policy
		want   sandbox.Profile
	}{
		{"danger-full-access", sandbox.Policy{Mode: sandbox.PolicyDangerFullAccess},
			sandbox.Profile{Type: sandbox.ProfileManaged, FileSystem: sandbox.FileSystemUnrestricted, Network: sandbox.NetworkEnabled}},
		{"external-sandbox restricted", sandbox.Policy{Mode: sandbox.PolicyExternalSandbox},
			sandbox.Profile{Type: sandbox.ProfileExternal, Network: sandbox.NetworkRestricted}},
		{"external-sandbox enabled", sandbox.Policy{Mode: sandbox.PolicyExternalSandbox, NetworkAccess: true},
			sandbox.Profile{Type: sandbox.ProfileExternal, Network: sandbox.NetworkEnabled}},
		{"read-only", sandbox.Policy{Mode: sandbox.PolicyReadOnly},
			sandbox.Managed(sandbox.NetworkRestricted, rootRead)},
		{"read-only network", sandbox.Policy{Mode: sandbox.PolicyReadOnly, NetworkAccess: true},
			sandbox.Managed(sandbox.NetworkEnabled, rootRead)},
		{"workspace-write defaults", sandbox.Policy{Mode: sandbox.PolicyWorkspaceWrite},
			sandbox.Managed(sandbox.NetworkRestricted, withMeta(rootRead,
				sandbox.ProjectRootsEntry("", sandbox.AccessWrite),
				sandbox.SpecialEntry(sandbox.SpecialSlashTmp, sandbox.AccessWrite),
				sandbox.SpecialEntry(sandbox.SpecialTmpdir, sandbox.AccessWrite))...)},
		{"workspace-write excluded tmp, roots, network", sandbox.Policy{Mode: sandbox.PolicyWorkspaceWrite,
			WritableRoots: []string{"/opt/cache", "/srv/data"}, NetworkAccess: true, ExcludeTmpdirEnvVar: true, ExcludeSlashTmp: true},
			sandbox.Managed(sandbox.NetworkEnabled, withMeta(rootRead,
				sandbox.ProjectRootsEntry("", sandbox.AccessWrite),
				sandbox.PathEntry("/opt/cache", sandbox.AccessWrite),
				sandbox.PathEntry("/srv/data", sandbox.AccessWrite))...)},
		{"workspace-write only slash_tmp excluded", sandbox.Policy{Mode: sandbox.PolicyWorkspaceWrite, ExcludeSlashTmp: true},
			sandbox.Managed(sandbox.NetworkRestricted, withMeta(rootRead,
				sandbox.ProjectRootsEntry("", sandbox.AccessWrite),
				sandbox.SpecialEntry(sandbox.SpecialTmpdir, sandbox.AccessWrite))...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := tt.policy.Profile()
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Profile()\ngot  %+v\nwant %+v", got, tt.want)
			}
			back, err := got.Legacy("/work/proj")
			if err != nil {
				t.Fatalf("Legacy: %v", err)
			}
			if !reflect.DeepEqual(back, tt.policy) {
				t.Fatalf("Legacy()\ngot  %+v\nwant %+v", back, tt.policy)
			}
		})
	}
}

func TestLegacyProjection(t *testing.T) {
	t.Parallel()
	cwd := "/tmp/workspace"
	tests := []struct {
		name    string
		profile sandbox.Profile
		want    sandbox.Policy
		err     bool
	}{
		// Checklist item 23: an unknown special write entry is ignored.
		{"unknown special write is ignored", sandbox.Managed(sandbox.NetworkRestricted, sandbox.Entry{
			Path:   sandbox.EntryPath{Type: sandbox.PathSpecial, Kind: sandbox.SpecialUnknown, Token: ":future_special_path"},
			Access: sandbox.AccessWrite}),
			sandbox.Policy{Mode: sandbox.PolicyReadOnly}, false},
		{"disabled", sandbox.Profile{Type: sandbox.ProfileDisabled}, sandbox.Policy{Mode: sandbox.PolicyDangerFullAccess}, false},
		{"unrestricted without network", sandbox.Profile{FileSystem: sandbox.FileSystemUnrestricted},
			sandbox.Policy{Mode: sandbox.PolicyExternalSandbox}, false},
		{"root write", sandbox.Managed(sandbox.NetworkEnabled, sandbox.SpecialEntry(sandbox.SpecialRoot, sandbox.AccessWrite)),
			sandbox.Policy{Mode: sandbox.PolicyDangerFullAccess}, false},
		{"cwd path write is the workspace", sandbox.Managed(sandbox.NetworkRestricted,
			sandbox.SpecialEntry(sandbox.SpecialRoot, sandbox.AccessRead), sandbox.PathEntry(cwd, sandbox.AccessWrite),
			sandbox.GlobDenyEntry("**/*.env")),
			sandbox.Policy{Mode: sandbox.PolicyWorkspaceWrite, ExcludeTmpdirEnvVar: true, ExcludeSlashTmp: true}, false},
		{"writes outside the workspace", sandbox.Managed(sandbox.NetworkRestricted, sandbox.PathEntry("/opt", sandbox.AccessWrite)),
			sandbox.Policy{}, true},
	}
	for _, tt := range tests {
		got, err := tt.profile.Legacy(cwd)
		if (err != nil) != tt.err {
			t.Errorf("%s: error %v, want error %v", tt.name, err, tt.err)
			continue
		}
		if tt.err {
			if !errors.Is(err, sandbox.ErrInvalidPolicy) {
				t.Errorf("%s: error %v does not wrap ErrInvalidPolicy", tt.name, err)
			}
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s:\ngot  %+v\nwant %+v", tt.name, got, tt.want)
		}
	}
}

func TestPolicyWritableRootsOrder(t *testing.T) {
	t.Parallel()
	p := sandbox.Policy{Mode: sandbox.PolicyWorkspaceWrite, WritableRoots: []string{"/opt/cache"}}
	got := p.WritableRootsFor("/w", "/var/tmp/x")
	want := []string{"/opt/cache", "/w", "/tmp", "/var/tmp/x"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	p.ExcludeSlashTmp, p.ExcludeTmpdirEnvVar = true, true
	if got := p.WritableRootsFor("/w", "/var/tmp/x"); !reflect.DeepEqual(got, []string{"/opt/cache", "/w"}) {
		t.Fatalf("excluded: got %v", got)
	}
	p.ExcludeTmpdirEnvVar = false
	if got := p.WritableRootsFor("/w", "relative"); !reflect.DeepEqual(got, []string{"/opt/cache", "/w"}) {
		t.Fatalf("relative TMPDIR: got %v", got)
	}
	if got := (sandbox.Policy{Mode: sandbox.PolicyReadOnly}).WritableRootsFor("/w", "/tmp"); got != nil {
		t.Fatalf("read-only: got %v", got)
	}
}
