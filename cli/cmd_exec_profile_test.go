package cli

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestExecProfile checks --sandbox and --permission-profile: a mode, a
// JSON profile, the same profile from @FILE, neither, and the errors.
func TestExecProfile(t *testing.T) {
	const js = `{"type":"managed","file_system":{"type":"restricted","entries":[{"path":{"type":"special","value":{"kind":"root"}},"access":"read"}]},"network":"restricted"}`
	file := filepath.Join(t.TempDir(), "p.json")
	if err := os.WriteFile(file, []byte(js), 0o600); err != nil {
		t.Fatal(err)
	}
	inline, err := execProfile("", js)
	if err != nil || inline == nil {
		t.Fatalf("inline profile: %v, %v", inline, err)
	}
	fromFile, err := execProfile("", "@"+file)
	if err != nil || !reflect.DeepEqual(fromFile, inline) {
		t.Errorf("@FILE profile %+v, %v; want %+v", fromFile, err, inline)
	}
	if p, err := execProfile("read-only", ""); err != nil || p == nil {
		t.Errorf("--sandbox read-only: %v, %v", p, err)
	}
	if p, err := execProfile("", ""); p != nil || err != nil {
		t.Errorf("no sandbox: %v, %v", p, err)
	}
	for _, bad := range [][2]string{{"read-only", js}, {"bogus", ""}, {"", "@" + file + ".missing"}, {"", "{"}} {
		if _, err := execProfile(bad[0], bad[1]); err == nil {
			t.Errorf("execProfile(%q, %q): no error", bad[0], bad[1])
		}
	}
}
