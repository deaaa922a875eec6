package execserver

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/codexec/codex/sandbox"
	"github.com/codexec/codex/wire"
)

// TestParseExecPolicyDangerFullAccess checks the shortcut for
// dangerFullAccess against sandbox.ParsePolicy, extra members included.
func TestParseExecPolicyDangerFullAccess(t *testing.T) {
	for _, in := range []string{
		`{"type":"dangerFullAccess"}`,
		`{"type":"dangerFullAccess","networkAccess":false,"writableRoots":["rel"],"access":{"type":"restricted"}}`,
	} {
		var raw map[string]any
		if err := json.Unmarshal([]byte(in), &raw); err != nil {
			t.Fatal(err)
		}
		got, err := parseExecPolicy(raw)
		want, werr := sandbox.ParsePolicy(json.RawMessage(`{"type":"dangerFullAccess"}`))
		if err != nil || werr != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %+v, %v; want %+v, %v", in, got, err, want, werr)
		}
	}
}

// BenchmarkDecodeCommandExecPolicy decodes the params of the #14 request
// and parses its policy, as command/exec does.
func BenchmarkDecodeCommandExecPolicy(b *testing.B) {
	b.ReportAllocs()
	raw := json.RawMessage(`{"command":["/bin/true"],"sandboxPolicy":{"type":"dangerFullAccess"}}`)
	for b.Loop() {
		p, derr := wire.DecodeCommandExecParams(raw)
		if derr != nil {
			b.Fatal(derr)
		}
		if _, err := parseExecPolicy(p.SandboxPolicy); err != nil {
			b.Fatal(err)
		}
	}
}
