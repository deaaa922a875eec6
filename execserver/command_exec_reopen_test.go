package execserver

import (
	"testing"

	"github.com/codexec/codex/sandbox"
)

// TestReopensDenied: a root inside a deny path is refused unless the
// operator's profile grants a folder strictly inside that deny path; a
// grant of "/" or of a folder above it explains nothing.
func TestReopensDenied(t *testing.T) {
	ops := operatorAllowances([]sandbox.Entry{
		sandbox.PathEntry("/", sandbox.AccessRead),
		sandbox.PathEntry("/srv", sandbox.AccessRead),
		sandbox.PathEntry("/srv/secret/pub", sandbox.AccessWrite),
		sandbox.PathEntry("/srv/secret/hidden", sandbox.AccessDeny),
		sandbox.ProjectRootsEntry("docs", sandbox.AccessRead),
		sandbox.ProjectRootsEntry("vendor/pub", sandbox.AccessWrite),
	}, []string{"/w", "/srv/secret"})
	for _, c := range []struct {
		root, deny string
		ok         bool
	}{
		{"/srv/secret/pub", "/srv/secret", true},
		{"/srv/secret/pub/x", "/srv/secret", true},
		{"/srv/secret/other", "/srv/secret", false},
		{"/srv/secret/hidden/x", "/srv/secret", false},
		{"/srv/secret", "/srv/secret", true}, // the mask covers it
		{"/w/vendor/pub", "/w/vendor", true},
		{"/w/vendor/other", "/w/vendor", false},
		{"/srv/secret/docs", "/srv/secret", false}, // the workspace root is the denied folder
		{"/w/docs", "/w", false},
		{"/elsewhere/x", "/elsewhere", false},
	} {
		plan := &sandbox.Plan{WritableRoots: []sandbox.WritableRoot{{Path: c.root}}, DenyPaths: []string{c.deny}}
		if err := reopensDenied(plan, ops); (err == nil) != c.ok {
			t.Errorf("root %s in %s: %v, want ok=%v", c.root, c.deny, err, c.ok)
		}
		plan = &sandbox.Plan{RestrictedRead: true, ReadableRoots: []string{c.root}, DenyPaths: []string{c.deny}}
		if err := reopensDenied(plan, ops); (err == nil) != c.ok {
			t.Errorf("readable root %s in %s: %v, want ok=%v", c.root, c.deny, err, c.ok)
		}
	}
}
