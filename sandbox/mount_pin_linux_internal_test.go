//go:build linux

package sandbox

import (
	"reflect"
	"testing"
)

func TestPinDirs(t *testing.T) {
	for _, tc := range []struct {
		name string
		plan Plan
		want []string
	}{
		{
			name: "from below the shallowest root to each parent",
			plan: Plan{ReadOnlyRoot: true,
				WritableRoots: []WritableRoot{{Path: "/tmp"}, {Path: "/tmp/p/proj"}},
				DenyPaths:     []string{"/tmp/p/proj/config/secret.key", "/tmp/p/proj/a/secrets"},
				ReadOnlyFiles: []string{"/tmp/p/proj/bin/codex"}},
			want: []string{"/tmp/p", "/tmp/p/proj", "/tmp/p/proj/config", "/tmp/p/proj/a", "/tmp/p/proj/bin"},
		},
		{
			name: "outside every writable root: nothing",
			plan: Plan{ReadOnlyRoot: true, WritableRoots: []WritableRoot{{Path: "/w"}}, DenyPaths: []string{"/etc/shadow", "/w"}},
			want: nil,
		},
		{
			name: "a writable base counts as a root at /",
			plan: Plan{DenyPaths: []string{"/home/u/.env"}},
			want: []string{"/home", "/home/u"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := pinDirs(&tc.plan, pinTargets(&tc.plan)); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("pinDirs = %q, want %q", got, tc.want)
			}
		})
	}
}
