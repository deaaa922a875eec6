package fshelper_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/codexec/codex/fshelper"
	"github.com/codexec/codex/wire"
)

// TestDiscoverSkillsFolderBound: a skills root with a link to a large tree
// (here a loop back to the root, and ten folders) is searched only up to
// the folder bound [ours]; reaching it leaves skills out and sets the
// warning, and without the bound every skill is found once.
func TestDiscoverSkillsFolderBound(t *testing.T) {
	root := filepath.Join(t.TempDir(), "skills")
	for i := range 10 {
		dir := filepath.Join(root, string(rune('a'+i)))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\ndescription: d\n---\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(".", filepath.Join(root, "loop")); err != nil {
		t.Fatal(err)
	}
	roots := []fshelper.SkillRootDir{{ID: wire.SkillRootCodexHome, Path: root}}
	skills, incomplete := fshelper.DiscoverSkills(roots)
	if len(skills) != 10 || incomplete || skills[0].Name != "a" || skills[9].Name != "j" {
		t.Errorf("unbounded: %d skills (%v), incomplete %v; want a…j once each", len(skills), skills, incomplete)
	}
	defer fshelper.SetMaxSkillDirs(4)()
	skills, incomplete = fshelper.DiscoverSkills(roots)
	if len(skills) != 3 || !incomplete {
		t.Errorf("bounded at 4 folders: %d skills, incomplete %v; want 3 (the root is one) and the warning", len(skills), incomplete)
	}
}
