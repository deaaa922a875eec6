package sandbox

import (
	"reflect"
	"strings"
	"testing"
)

// ModeProfile is the one mapping of a mode name to its profile: the legacy
// policy, the CLI flags and the named profiles agree with it.
func TestModeProfile(t *testing.T) {
	opts := ModeOptions{WritableRoots: []string{"/w"}, Network: true, ExcludeSlashTmp: true}
	for _, mode := range []PolicyMode{PolicyReadOnly, PolicyWorkspaceWrite, PolicyDangerFullAccess} {
		got, err := ModeProfile(string(mode), opts)
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		pol := Policy{Mode: mode, WritableRoots: opts.WritableRoots, NetworkAccess: true, ExcludeSlashTmp: true}
		if want := pol.Profile(); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: ModeProfile %+v, legacy policy %+v", mode, got, want)
		}
	}
	ro, _ := ModeProfile("read-only", ModeOptions{})
	if named, _ := NamedProfile(":read-only"); !reflect.DeepEqual(ro, named) {
		t.Fatalf(":read-only %+v, read-only %+v", named, ro)
	}
	ww, _ := ModeProfile("workspace-write", ModeOptions{})
	if named, _ := NamedProfile(":workspace"); !reflect.DeepEqual(ww, named) {
		t.Fatalf(":workspace %+v, workspace-write %+v", named, ww)
	}
	if _, err := ModeProfile("bogus", ModeOptions{}); err == nil || !strings.Contains(err.Error(), `"bogus"`) {
		t.Fatalf("unknown mode: %v", err)
	}
}
