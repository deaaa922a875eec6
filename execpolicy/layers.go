package execpolicy

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// SystemRulesDir is the rules folder of the system layer.
var SystemRulesDir = "/etc/codex/rules"

// LoadLayers loads the rules of the system layer (SystemRulesDir) and then
// of the user layer ($codexHome/rules): in each folder, the regular files
// whose names end in ".rules" (case-sensitive, hidden ones included),
// sorted by name; symlinks and subfolders are skipped. A missing rules
// folder means no rules. codexHome must exist: a missing one is an error,
// as is any file that cannot be read or loaded (a *FileError naming it).
// An empty codexHome means no user layer.
func LoadLayers(codexHome string) (*Policy, error) {
	dirs := []string{SystemRulesDir}
	if codexHome != "" {
		if _, err := os.Stat(codexHome); err != nil {
			return nil, &FileError{Op: "read", Path: codexHome, Err: err}
		}
		dirs = append(dirs, filepath.Join(codexHome, "rules"))
	}
	var files []string
	for _, dir := range dirs {
		fs, err := rulesFiles(dir)
		if err != nil {
			return nil, err
		}
		files = append(files, fs...)
	}
	return LoadFiles(files...)
}

// UserLayerHome is the codexHome argument of LoadLayers for this
// process: $CODEX_HOME when set (it must exist), else ~/.codex when that
// exists, else "" (no user layer: a user who never ran Codex has no
// rules, which is not an error).
func UserLayerHome() (string, error) {
	if h := os.Getenv("CODEX_HOME"); h != "" {
		return h, nil
	}
	h, err := CodexHome()
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(h); errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	return h, nil
}

// CodexHome returns $CODEX_HOME, or ~/.codex when it is unset or empty.
// It does not check that the folder exists (LoadLayers does).
func CodexHome() (string, error) {
	if h := os.Getenv("CODEX_HOME"); h != "" {
		return h, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".codex"), nil
}

// rulesFiles lists the *.rules regular files of dir, sorted by name.
func rulesFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &FileError{Op: "read", Path: dir, Err: err}
	}
	var out []string
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".rules") {
			continue
		}
		out = append(out, filepath.Join(dir, e.Name()))
	}
	sort.Strings(out)
	return out, nil
}
