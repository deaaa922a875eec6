package fshelper

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"gopkg.in/yaml.v3"

	"github.com/codexec/codex/wire"
)

// Skill discovery (capabilities/discoverV2, docs/protocol.md §6.15): the
// SKILL.md files under the discovery roots of this host, as the reference
// 0.169.0 finds them.

// SkillRootDir is one discovery root: its id on the wire and its folder.
type SkillRootDir struct {
	ID   string `json:"id"`
	Path string `json:"path"`
}

// maxSkillDepth is how many folders below a root a SKILL.md is looked for
// (the reference finds one 6 levels down, not 7).
const maxSkillDepth = 6

// maxSkillNameLen is the longest name a skill may have, in characters.
const maxSkillNameLen = 64

// maxSkillFile bounds what is read of a SKILL.md or an openai.yaml [ours].
const maxSkillFile = 1 << 20

// maxSkillDirs bounds the folders searched under one root [ours]: a link
// to / would otherwise have every folder 6 levels down read.
var maxSkillDirs = 20000

// SkillRoots returns the discovery roots for the environment getenv:
// $CODEX_HOME/skills (or ~/.codex/skills) and ~/.agents/skills.
func SkillRoots(getenv func(string) string) []SkillRootDir {
	var roots []SkillRootDir
	home := getenv("HOME")
	codexHome := getenv("CODEX_HOME")
	if codexHome == "" && home != "" {
		codexHome = filepath.Join(home, ".codex")
	}
	if codexHome != "" {
		if abs, err := filepath.Abs(codexHome); err == nil {
			roots = append(roots, SkillRootDir{ID: wire.SkillRootCodexHome, Path: filepath.Join(abs, "skills")})
		}
	}
	if filepath.IsAbs(home) {
		roots = append(roots, SkillRootDir{ID: wire.SkillRootUserAgents, Path: filepath.Join(home, ".agents", "skills")})
	}
	return roots
}

// DiscoverSkills lists the valid skills under roots, root by root and, in
// a root, by path. incomplete reports that something could not be read or
// a SKILL.md was not valid (the reference's one warning); a root that does
// not exist is not that.
func DiscoverSkills(roots []SkillRootDir) (skills []wire.Skill, incomplete bool) {
	skills = []wire.Skill{}
	for _, root := range roots {
		sc := skillScan{visited: map[devIno]bool{}}
		incomplete = sc.scan(root.Path, 0) || incomplete
		files := sc.files
		slices.Sort(files)
		for _, f := range files {
			s, err := readSkill(f)
			if err != nil {
				incomplete = true
				continue
			}
			if s.metadataIncomplete {
				incomplete = true
			}
			s.Skill.Path = wire.FileURI(f)
			s.Skill.DiscoveryRoot = wire.SkillRoot{ID: root.ID, Path: wire.FileURI(root.Path)}
			skills = append(skills, s.Skill)
		}
	}
	return skills, incomplete
}

// skillScan is the search of one root.
type skillScan struct {
	visited map[devIno]bool
	files   []string
}

// scan collects the SKILL.md files in dir and below it, following links
// to folders once each; it reports whether a folder could not be read (or
// the search stopped at maxSkillDirs).
func (sc *skillScan) scan(dir string, depth int) (failed bool) {
	st, err := os.Stat(dir)
	if err != nil {
		return depth > 0 || !errors.Is(err, fs.ErrNotExist)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		id := devIno{uint64(sys.Dev), sys.Ino}
		if sc.visited[id] {
			return false
		}
		if len(sc.visited) >= maxSkillDirs {
			return true
		}
		sc.visited[id] = true
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return true
	}
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if e.Name() == "SKILL.md" {
			if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
				sc.files = append(sc.files, path)
			}
			continue
		}
		if depth >= maxSkillDepth {
			continue
		}
		isDir := e.IsDir()
		if e.Type()&fs.ModeSymlink != 0 {
			fi, err := os.Stat(path)
			isDir = err == nil && fi.IsDir()
		}
		if isDir && sc.scan(path, depth+1) {
			failed = true
		}
	}
	return failed
}

type parsedSkill struct {
	wire.Skill
	metadataIncomplete bool // agents/openai.yaml exists but could not be read
}

// readSkill reads one SKILL.md: YAML front matter between two "---"
// lines at its top, with a description; the name defaults to the folder's.
func readSkill(path string) (parsedSkill, error) {
	var s parsedSkill
	data, err := readSmall(path)
	if err != nil {
		return s, err
	}
	front, ok := frontMatter(data)
	if !ok {
		return s, errors.New("no front matter")
	}
	var fm map[string]any
	if err := yaml.Unmarshal(front, &fm); err != nil {
		return s, err
	}
	name := collapse(scalar(fm["name"]))
	if name == "" {
		name = filepath.Base(filepath.Dir(path))
	}
	desc := collapse(scalar(fm["description"]))
	if desc == "" || len([]rune(name)) > maxSkillNameLen {
		return s, errors.New("invalid front matter")
	}
	s.Name, s.Description = name, desc
	if md, ok := fm["metadata"].(map[string]any); ok {
		if sd := scalar(md["short-description"]); sd != "" {
			s.ShortDescription = &sd
		}
	}
	s.Dependencies, s.Policy, s.metadataIncomplete = readSkillMetadata(filepath.Join(filepath.Dir(path), "agents", "openai.yaml"))
	return s, nil
}

// readSkillMetadata reads a skill's agents/openai.yaml: its dependencies
// and policy, nil when absent.
func readSkillMetadata(path string) (*wire.SkillDependencies, *wire.SkillPolicy, bool) {
	data, err := readSmall(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, false
	}
	if err != nil {
		return nil, nil, true
	}
	var m struct {
		Policy *struct {
			AllowImplicitInvocation *bool    `yaml:"allow_implicit_invocation"`
			Products                []string `yaml:"products"`
		} `yaml:"policy"`
		Dependencies *struct {
			Tools []struct {
				Type        string  `yaml:"type"`
				Value       string  `yaml:"value"`
				Description *string `yaml:"description"`
				Transport   *string `yaml:"transport"`
				Command     *string `yaml:"command"`
				URL         *string `yaml:"url"`
			} `yaml:"tools"`
		} `yaml:"dependencies"`
	}
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, nil, true
	}
	var deps *wire.SkillDependencies
	if m.Dependencies != nil {
		deps = &wire.SkillDependencies{Tools: []wire.SkillTool{}}
		for _, t := range m.Dependencies.Tools {
			deps.Tools = append(deps.Tools, wire.SkillTool{Type: t.Type, Value: t.Value, Description: t.Description,
				Transport: t.Transport, Command: t.Command, URL: t.URL})
		}
	}
	var pol *wire.SkillPolicy
	if m.Policy != nil {
		pol = &wire.SkillPolicy{AllowImplicitInvocation: m.Policy.AllowImplicitInvocation, Products: m.Policy.Products}
		if pol.Products == nil {
			pol.Products = []string{}
		}
	}
	return deps, pol, false
}

// frontMatter returns the YAML between a first line "---" and the next
// line "---" (CRLF or LF).
func frontMatter(data []byte) ([]byte, bool) {
	data = bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n"))
	rest, ok := bytes.CutPrefix(data, []byte("---\n"))
	if !ok {
		return nil, false
	}
	if bytes.HasPrefix(rest, []byte("---\n")) || bytes.Equal(rest, []byte("---")) {
		return nil, true
	}
	i := bytes.Index(rest, []byte("\n---\n"))
	if i < 0 {
		if !bytes.HasSuffix(rest, []byte("\n---")) {
			return nil, false
		}
		i = len(rest) - len("\n---")
	}
	return rest[:i+1], true
}

// readSmall reads a file of at most maxSkillFile bytes.
func readSmall(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSkillFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxSkillFile {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, maxSkillFile)
	}
	return data, nil
}

// scalar is a YAML scalar as text ("" for anything else).
func scalar(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case int, int64, uint64, float64, bool:
		return fmt.Sprint(v)
	}
	return ""
}

// collapse joins the words of s with single spaces.
func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }
