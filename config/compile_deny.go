package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/codexec/codex/sandbox"
)

// denyGlob compiles an absolute or `~/…` deny glob written as a
// filesystem key. The pattern must not be rooted at "/" (checkGlobRoot).
// When a file or folder of that very name exists (a name with brackets,
// say), it is denied as well, and so is the folder of a `…/**` pattern:
// the key may have meant the literal path.
func (p *Permissions) denyGlob(pattern string) ([]sandbox.Entry, error) {
	abs := pattern
	if pattern == "~" || strings.HasPrefix(pattern, "~/") {
		if !filepath.IsAbs(p.home) {
			return globDeny(pattern), nil // the sandbox fails closed
		}
		abs = filepath.Join(p.home, strings.TrimPrefix(pattern, "~"))
	}
	if err := checkGlobRoot(abs); err != nil {
		return nil, err
	}
	out := globDeny(pattern)
	for _, lit := range []string{abs, strings.TrimSuffix(abs, "/**")} {
		if _, err := os.Lstat(lit); err == nil {
			out = append(out, sandbox.PathEntry(lit, sandbox.AccessDeny))
			break
		}
	}
	return out, nil
}

// checkGlobRoot refuses a deny glob whose scan would start at "/": the
// sandbox skips such a pattern as too broad, so it would deny nothing
// while the file says otherwise. An unescaped `{` counts as the start of
// the pattern (an alternation may name several top-level folders).
func checkGlobRoot(pattern string) error {
	clean := filepath.Clean(pattern)
	for i := 0; i < len(clean); i++ {
		switch clean[i] {
		case '\\':
			i++
		case '*', '?', '[', ']', '{':
			if strings.LastIndex(clean[:i], "/") <= 0 {
				return unsupported{fmt.Sprintf("deny glob `%s` is rooted at `/`: the sandbox cannot scan the whole file system for it, so it would deny nothing; name the folder to scan", clean)}
			}
			return nil
		}
	}
	return nil
}

// pinProtection turns a kept deny entry into entries that do not depend
// on the context of the request that keeps it: a `:workspace_roots`
// subpath becomes one absolute path per configured workspace root, and
// `:tmpdir` also names the server's own $TMPDIR.
func (p *Permissions) pinProtection(e sandbox.Entry, roots []string) []sandbox.Entry {
	if e.Path.Type != sandbox.PathSpecial {
		return []sandbox.Entry{e}
	}
	switch e.Path.Kind {
	case sandbox.SpecialProjectRoots:
		var out []sandbox.Entry
		for _, r := range roots {
			out = append(out, sandbox.PathEntry(filepath.Join(r, e.Path.Subpath), sandbox.AccessDeny))
		}
		return out
	case sandbox.SpecialTmpdir:
		if filepath.IsAbs(p.tmpdir) {
			return []sandbox.Entry{e, sandbox.PathEntry(p.tmpdir, sandbox.AccessDeny)}
		}
	}
	return []sandbox.Entry{e}
}

// literalSubtree reports a glob that is only a trailing `/**` after a
// literal path. As a deny it is compiled as that path: the whole folder is
// masked, instead of the files that exist at the start being matched down
// to glob_scan_max_depth.
func literalSubtree(pattern string) bool {
	s, ok := strings.CutSuffix(pattern, "/**")
	return ok && s != "" && !hasGlob(s)
}

// warnDroppedDenies warns when a profile's plain value replaces a table of
// its parent that holds deny subpaths: `extends` lets the child's key win
// whole, so those denies no longer apply, which a reader of the child
// alone would not guess.
func (p *Permissions) warnDroppedDenies(name string) {
	child := p.profiles[name]
	if _, ok := p.profiles[child.extends]; !ok {
		return
	}
	_, parent, err := p.flatten(child.extends)
	if err != nil {
		return
	}
	for _, k := range sortedKeys(child.fs) {
		pv, ok := parent.fs[k]
		if !ok || child.fs[k].scoped != nil || pv.scoped == nil {
			continue
		}
		for _, sub := range sortedKeys(pv.scoped) {
			if pv.scoped[sub] == sandbox.AccessDeny {
				p.warnf("permissions."+quoteKey(name)+".filesystem."+quoteKey(k), "replaces the table of `%s`, whose deny of `%s` no longer applies; write a table to keep it", child.extends, sub)
			}
		}
	}
}

// globDeny returns the deny entries of a glob: the pattern, and the files
// below what it matches. The sandbox's scan matches files only, so
// `**/.secrets` alone would deny nothing when .secrets is a folder.
func globDeny(pattern string) []sandbox.Entry {
	out := []sandbox.Entry{sandbox.GlobDenyEntry(pattern)}
	if !strings.HasSuffix(pattern, "/**") {
		out = append(out, sandbox.GlobDenyEntry(pattern+"/**"))
	}
	return out
}
