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
		sandbox.PathEntry("/srv/secret/ro", sandbox.AccessRead),
		sandbox.PathEntry("/srv/secret/hidden", sandbox.AccessDeny),
		sandbox.ProjectRootsEntry("docs", sandbox.AccessRead),
		sandbox.ProjectRootsEntry("vendor/pub", sandbox.AccessWrite),
	}, []string{"/w", "/srv/secret"})
	for _, c := range []struct {
		root, deny string
		ok, roOK   bool // as a writable root, as a readable one
	}{
		{"/srv/secret/pub", "/srv/secret", true, true},
		{"/srv/secret/pub/x", "/srv/secret", true, true},
		{"/srv/secret/other", "/srv/secret", false, false},
		{"/srv/secret/ro/x", "/srv/secret", false, true}, // read granted, not write
		{"/srv/secret/hidden/x", "/srv/secret", false, false},
		{"/srv/secret", "/srv/secret", true, true}, // the mask covers it
		{"/w/vendor/pub", "/w/vendor", true, true},
		{"/w/vendor/other", "/w/vendor", false, false},
		{"/srv/secret/docs", "/srv/secret", false, false}, // the workspace root is the denied folder
		{"/w/docs", "/w", false, false},
		{"/elsewhere/x", "/elsewhere", false, false},
	} {
		plan := &sandbox.Plan{WritableRoots: []sandbox.WritableRoot{{Path: c.root}}, DenyPaths: []string{c.deny}}
		if err := reopensDenied(plan, ops); (err == nil) != c.ok {
			t.Errorf("root %s in %s: %v, want ok=%v", c.root, c.deny, err, c.ok)
		}
		plan = &sandbox.Plan{RestrictedRead: true, ReadableRoots: []string{c.root}, DenyPaths: []string{c.deny}}
		if err := reopensDenied(plan, ops); (err == nil) != c.roOK {
			t.Errorf("readable root %s in %s: %v, want ok=%v", c.root, c.deny, err, c.roOK)
		}
	}
}
