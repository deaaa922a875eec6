package sandbox_test

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/codexec/codex/sandbox"
)

// TestResolveSelfReadOnly: our executable is a read-only file of every plan
// with a mount layer that would let the command write it, and of no other.
func TestResolveSelfReadOnly(t *testing.T) {
	proj := tempDir(t)
	writeFile(t, proj, "bin/codex", "binary")
	inside := filepath.Join(proj, "bin", "codex")
	other := tempDir(t)
	writeFile(t, other, "codex", "binary")
	outside := filepath.Join(other, "codex")
	symlink(t, inside, other, "link")

	for _, tc := range []struct {
		name    string
		p       sandbox.Profile
		self    string
		purpose sandbox.Purpose
		want    []string
	}{
		{"inside the workspace", workspace(), inside, sandbox.PurposeProcess, []string{inside}},
		{"inside, fs helper", workspace(), inside, sandbox.PurposeFSHelper, []string{inside}},
		{"through a symlink", workspace(), filepath.Join(other, "link"), sandbox.PurposeProcess, []string{inside}},
		{"outside the roots", workspace(), outside, sandbox.PurposeProcess, nil},
		{"read-only plan", sandbox.ReadOnly(false), inside, sandbox.PurposeProcess, nil},
		{"no mount layer", sandbox.DangerFullAccess(), inside, sandbox.PurposeProcess, nil},
		{"unknown executable", workspace(), "", sandbox.PurposeProcess, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := sandbox.Resolve(tc.p, sandbox.Context{Cwd: proj, Self: tc.self}, tc.purpose)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(plan.ReadOnlyFiles, tc.want) {
				t.Fatalf("ReadOnlyFiles %q, want %q", plan.ReadOnlyFiles, tc.want)
			}
			if len(tc.want) > 0 && (plan.CanWrite(inside) || !plan.CanWrite(filepath.Join(proj, "bin", "other")) || !plan.NewMountNS) {
				t.Fatalf("model: CanWrite(self) %v, CanWrite(sibling) %v, mount ns %v", plan.CanWrite(inside),
					plan.CanWrite(filepath.Join(proj, "bin", "other")), plan.NewMountNS)
			}
		})
	}
}
